// shardscope train: one rank of the embedded engine (see engine/training_run.hpp).
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "configs/display_text.hpp"
#include "engine/data/data_error.hpp"
#include "engine/models/model_error.hpp"
#include "engine/models/model_spec.hpp"
#include "engine/training_run.hpp"

namespace shardscope::app {
namespace {

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
  return parser;
}

std::int64_t positive(const ParsedArgs& p, const std::string& name, std::int64_t fallback) {
  const auto v = p.integer(name);
  if (!v) return fallback;
  if (*v <= 0) throw UsageError("--" + name + " must be positive, got " + std::to_string(*v));
  return *v;
}

engine::ModelSpec model_spec(const ParsedArgs& p) {
  const auto kind = engine::parse_model_kind(p.value("model").value_or("gpt2"), "--model");
  const auto seq = positive(p, "seq-len", 0);
  engine::ModelSpec spec = p.value("model-config") ? engine::model_spec_from_hf_config(*p.value("model-config"), seq)
                                                   : engine::default_model_spec(kind);
  if (p.value("model-config") && spec.kind != kind && p.value("model"))
    throw UsageError("--model " + *p.value("model") + " disagrees with the model_type of --model-config");
  auto& s = spec.transformer.shape;
  s.layers = positive(p, "layers", s.layers);
  s.hidden = positive(p, "hidden", s.hidden);
  s.heads = positive(p, "heads", s.heads);
  // Defaults follow the given sizes; a --model-config keeps its own.
  if (spec.kind == engine::ModelKind::kLlama && !p.value("model-config")) s.kv_heads = s.heads % 2 == 0 ? s.heads / 2 : s.heads;
  s.kv_heads = positive(p, "kv-heads", s.kv_heads);
  s.ffn = positive(p, "ffn", s.ffn);
  s.vocab = positive(p, "vocab", s.vocab);
  if (seq > 0) s.seq_len = seq;
  if (s.max_positions > 0 && s.max_positions < s.seq_len) s.max_positions = s.seq_len;
  spec.activation_checkpointing = p.has("activation-checkpointing");
  engine::validate_model_spec(spec);
  return spec;
}

}  // namespace

int run_train_command(const CommandArgs& args) {
  const ArgParser parser = train_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  if (!p.value("config")) throw UsageError("train needs --config FILE (a DeepSpeed config)");
  if (!p.value("steps")) throw UsageError("train needs --steps N (optimizer steps to reach)");
  engine::TrainRunOptions o;
  o.config_path = *p.value("config");
  for (const auto& text : p.values("set")) {
    try {
      o.overrides.push_back(configs::parse_override(text));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--set: ") + e.what());
    }
  }
  try {
    o.model = model_spec(p);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {  // an unknown --model, an unreadable --model-config
    throw UsageError(e.what());
  }
  o.weights_path = p.value("weights");
  o.data = p.value("data").value_or("synthetic");
  o.steps = positive(p, "steps", 0);
  o.save_dir = p.value("save");
  o.save_every = positive(p, "save-every", 0);
  o.save_format = p.value("save-format").value_or("safe");
  if (o.save_format != "safe" && o.save_format != "deepspeed")
    throw UsageError("--save-format '" + o.save_format + "' is not safe or deepspeed");
  o.load_dir = p.value("load");
  o.session_db = p.value("session");
  o.collector = p.value("collector");
  o.session_name = p.value("name").value_or("");
  o.device = p.value("device").value_or("auto");
  o.seed = static_cast<std::uint64_t>(positive(p, "seed", 42));
  o.progress_bar = ::isatty(STDERR_FILENO) != 0;
  if (const auto window = p.value("profile-steps")) {
    const auto colon = window->find(':');
    try {
      std::size_t used = 0;
      o.profile_start = std::stoll(window->substr(0, colon), &used);
      if (used != (colon == std::string::npos ? window->size() : colon)) throw std::invalid_argument("trailing text");
      o.profile_steps = colon == std::string::npos ? 1 : std::stoll(window->substr(colon + 1), &used);
      if (colon != std::string::npos && used != window->size() - colon - 1) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      throw UsageError("--profile-steps '" + *window + "' is not START or START:COUNT, e.g. --profile-steps 10:3");
    }
    if (o.profile_start < 1 || o.profile_steps < 1)
      throw UsageError("--profile-steps: START and COUNT must be at least 1 (steps count from 1)");
  }
  o.command_line = {"shardscope", "train"};
  o.command_line.insert(o.command_line.end(), args.begin(), args.end());
  try {
    const auto result = engine::run_training(o, std::cout, std::cerr);
    std::cout << "trained " << result.steps_done << " step(s) to global step " << result.global_steps << " ("
              << result.skipped_steps << " skipped) in " << result.wall_seconds << " s";
    if (result.final_loss) std::cout << ", final loss " << *result.final_loss;
    std::cout << ", " << static_cast<long long>(result.tokens_per_second) << " tokens/s\n";
    // The same summary `shardscope sessions show` prints.
    if (o.session_db && !result.session_uid.empty())
      return run_sessions_command({"show", result.session_uid, "--db", *o.session_db});
  } catch (const engine::TrainConfigError& e) {
    std::cerr << configs::shown_text(e.what());
    return kExitFindings;
  } catch (const engine::DataError& e) {  // an unreadable or mismatched token file: a bad input (README: 2)
    std::cerr << "shardscope train: error: " << configs::shown_text(e.what()) << "\n";
    return kExitUsage;
  } catch (const engine::ModelError& e) {  // weights that do not fit the model, a model too large to build
    std::cerr << "shardscope train: error: " << configs::shown_text(e.what()) << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace shardscope::app
