// The flags of `shardscope train`, shared with `shardscope tune`, which reads the model from the
// train arguments it passes to every trial (the estimator needs the model's shape).
#include "app/cli/train_args.hpp"

#include "app/cli/deepspeed_version_flag.hpp"

namespace shardscope::app {

ArgParser train_parser() {
  ArgParser parser("train",
                   "Trains the embedded engine on one rank with a DeepSpeed config. --steps counts optimizer\n"
                   "steps from the start of training, so a run resumed with --load stops where an\n"
                   "uninterrupted one would. Rank and world size come from RANK, LOCAL_RANK, WORLD_SIZE.");
  parser.option("config", "FILE", "DeepSpeed config (ds_config.json)")
      .option("set", "KEY=VALUE", "override or fill a config value, e.g. --set train_micro_batch_size_per_gpu=4", true)
      .option("model", "mlp|gpt2|llama", "built-in model (default: gpt2)")
      .option("model-config", "FILE", "Hugging Face config.json giving the model's sizes")
      .option("layers", "N", "decoder layers (default 4)")
      .option("hidden", "N", "hidden size (default 256)")
      .option("heads", "N", "attention heads (default 4)")
      .option("kv-heads", "N", "key/value heads (llama; default heads/2, or heads when odd)")
      .option("ffn", "N", "MLP inner size (default: gpt2 4 x hidden; llama 2/3 x 4 x hidden rounded up to 256)")
      .option("vocab", "N", "vocabulary size")
      .option("seq-len", "N", "tokens per sample (default 256)")
      .flag("activation-checkpointing", "recompute each block in backward")
      .option("weights", "FILE", "safetensors weights with Hugging Face names (file or index.json)")
      .option("data", "FILE|synthetic", "token file (uint16/uint32, nanoGPT or llm.c) or synthetic (default)")
      .option("steps", "N", "optimizer steps to reach")
      .option("save", "DIR", "checkpoint folder (DeepSpeed layout); saved at the end")
      .option("save-every", "K", "also save every K steps")
      .option("save-format", "safe|deepspeed",
              "safe (default): every file opens with torch.load(weights_only=True); deepspeed: "
              "adds DeepSpeed's LossScaler object, which its ZeRO-3 load_checkpoint needs")
      .option("load", "DIR", "resume from DIR/latest (written by ShardScope or DeepSpeed)")
      .option("session", "FILE", "record the run in this session database")
      .option("collector", "HOST:PORT", "stream events to a launcher's collector instead")
      .option("name", "TEXT", "session name (default: the config file's name)")
      .option("device", "auto|cpu|cuda|cuda:N", "where to train (default auto: GPU LOCAL_RANK if any)")
      .option("seed", "N", "seed of the weights and data (default 42)")
      .option("profile-steps", "START[:COUNT]",
              "record the GPU activity (kernels, copies, NVTX) of COUNT steps (default 1) from START");
  add_deepspeed_version_option(parser);  // whose rules validate --config (`launch` passes its own)
  return parser;
}

std::int64_t positive_train_flag(const ParsedArgs& p, const std::string& name, std::int64_t fallback) {
  const auto v = p.integer(name);
  if (!v) return fallback;
  if (*v <= 0) throw UsageError("--" + name + " must be positive, got " + std::to_string(*v));
  return *v;
}

engine::ModelSpec train_model_spec(const ParsedArgs& p) {
  const auto kind = engine::parse_model_kind(p.value("model").value_or("gpt2"), "--model");
  const auto seq = positive_train_flag(p, "seq-len", 0);
  engine::ModelSpec spec = p.value("model-config") ? engine::model_spec_from_hf_config(*p.value("model-config"), seq)
                                                   : engine::default_model_spec(kind);
  if (p.value("model-config") && spec.kind != kind && p.value("model"))
    throw UsageError("--model " + *p.value("model") + " disagrees with the model_type of --model-config");
  auto& s = spec.transformer.shape;
  s.layers = positive_train_flag(p, "layers", s.layers);
  s.hidden = positive_train_flag(p, "hidden", s.hidden);
  s.heads = positive_train_flag(p, "heads", s.heads);
  // Defaults follow the given sizes; a --model-config keeps its own.
  if (spec.kind == engine::ModelKind::kLlama && !p.value("model-config")) s.kv_heads = s.heads % 2 == 0 ? s.heads / 2 : s.heads;
  s.kv_heads = positive_train_flag(p, "kv-heads", s.kv_heads);
  s.ffn = positive_train_flag(p, "ffn", s.ffn);
  s.vocab = positive_train_flag(p, "vocab", s.vocab);
  if (seq > 0) s.seq_len = seq;
  if (s.max_positions > 0 && s.max_positions < s.seq_len) s.max_positions = s.seq_len;
  spec.activation_checkpointing = p.has("activation-checkpointing");
  engine::validate_model_spec(spec);
  return spec;
}

}  // namespace shardscope::app
