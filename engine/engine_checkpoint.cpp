// Engine::save_checkpoint and Engine::load_checkpoint in DeepSpeed 0.19.7's layout, through the
// LibTorch-free checkpoints library. What goes into each file is the library's business
// (checkpoints/deepspeed_checkpoint_writer.hpp); here the engine converts its tensors and its own
// partitioning (checkpoint_repartition.hpp) to DeepSpeed's and back, and orders the save so that
// a crash at any point leaves `latest` on a complete tag: the old manifest goes first, then every
// rank's files, then the manifest, then `latest`.
#include <array>
#include <functional>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/checkpoint_folder.hpp"
#include "checkpoints/deepspeed_checkpoint.hpp"
#include "checkpoints/deepspeed_checkpoint_writer.hpp"
#include "checkpoints/regular_file.hpp"
#include "engine/checkpoint_repartition.hpp"
#include "engine/engine.hpp"
#include "profiler/nvtx_ranges.hpp"
#include "sessions/build_info.hpp"

namespace shardscope::engine {
namespace ck = checkpoints;
namespace fs = std::filesystem;
namespace {

torch::Tensor cpu_contiguous(const torch::Tensor& t) { return t.detach().to(torch::kCPU).contiguous(); }
torch::Tensor cpu_fp32(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat32).contiguous(); }

ck::DType checkpoint_dtype(torch::Dtype d) {
  if (d == torch::kBFloat16) return ck::DType::kBFloat16;
  if (d == torch::kHalf) return ck::DType::kFloat16;
  return ck::DType::kFloat32;
}

// torch's param_groups[0] for the optimizer DeepSpeed builds from this config with torch_adam
// (torch.optim.AdamW / Adam), or the hyperparameters of the other optimizers.
std::string param_group_json(const OptimizerSettings& s, double lr) {
  nlohmann::json g{{"lr", lr}};
  switch (s.algorithm) {
    case OptimizerAlgorithm::kAdam:
    case OptimizerAlgorithm::kAdamW:
      g.update({{"betas", {s.beta1, s.beta2}}, {"eps", s.eps}, {"weight_decay", s.weight_decay}, {"amsgrad", false},
                {"maximize", false}, {"foreach", nullptr}, {"capturable", false}, {"differentiable", false},
                {"fused", nullptr}, {"decoupled_weight_decay", s.algorithm == OptimizerAlgorithm::kAdamW}});
      break;
    case OptimizerAlgorithm::kLamb:
      g.update({{"betas", {s.beta1, s.beta2}}, {"eps", s.eps}, {"weight_decay", s.weight_decay},
                {"bias_correction", s.bias_correction}, {"max_coeff", s.max_coeff}, {"min_coeff", s.min_coeff}});
      break;
    case OptimizerAlgorithm::kLion: g.update({{"betas", {s.beta1, s.beta2}}, {"weight_decay", s.weight_decay}}); break;
    case OptimizerAlgorithm::kAdagrad:
      g.update({{"lr_decay", s.lr_decay}, {"eps", s.eps}, {"weight_decay", s.weight_decay},
                {"initial_accumulator_value", s.initial_accumulator_value}});
      break;
    case OptimizerAlgorithm::kSgd:
      g.update({{"momentum", s.momentum}, {"dampening", s.dampening}, {"weight_decay", s.weight_decay},
                {"nesterov", s.nesterov}});
      break;
  }
  return g.dump();
}

bool collective(Communicator* comm) { return comm && comm->world_size() > 1; }

// Runs `fn` (no collectives inside) on every rank; if it failed anywhere, every rank throws: the
// failing one its own error, the others one saying so. A rank failing alone would otherwise leave
// the rest waiting in the next collective until it times out.
template <typename Fn>
void on_every_rank(Communicator* comm, const std::string& what, Fn&& fn) {
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
  }
  const double failed = collective(comm) ? comm->all_reduce_scalar(error ? 1.0 : 0.0, ReduceOp::kMax) : (error ? 1.0 : 0.0);
  if (error) std::rethrow_exception(error);
  if (failed > 0) throw std::runtime_error(what + " failed on another rank (its log says why)");
}

// Rank 0's fresh save id, on every rank.
std::string shared_save_id(Communicator* comm, int rank) {
  std::string id = rank == 0 ? ck::new_save_id() : std::string(32, '0');
  if (!collective(comm)) return id;
  auto t = torch::zeros({32}, torch::kInt64);
  for (int i = 0; i < 32; ++i) t[i] = static_cast<std::int64_t>(id[static_cast<std::size_t>(i)]);
  auto on_device = t.to(comm->device());
  comm->broadcast(on_device, 0, "checkpoint save id").wait();
  t = on_device.to(torch::kCPU);
  for (int i = 0; i < 32; ++i) id[static_cast<std::size_t>(i)] = static_cast<char>(t[i].item<std::int64_t>());
  return id;
}

// Every rank's {model bytes, model crc, optimizer bytes, optimizer crc} (-1: no such file), on every rank.
std::vector<std::array<std::int64_t, 4>> gather_digests(Communicator* comm, const std::optional<ck::FileDigest>& model,
                                                        const std::optional<ck::FileDigest>& optim) {
  std::array<std::int64_t, 4> mine{-1, -1, -1, -1};
  if (model) mine = {static_cast<std::int64_t>(model->size), model->crc32, -1, -1};
  if (optim) mine[2] = static_cast<std::int64_t>(optim->size), mine[3] = optim->crc32;
  if (!collective(comm)) return {mine};
  auto input = torch::tensor(std::vector<std::int64_t>(mine.begin(), mine.end()), torch::kInt64).to(comm->device());
  auto output = torch::zeros({4 * comm->world_size()}, input.options());
  comm->all_gather(output, input, "checkpoint digests").wait();
  output = output.to(torch::kCPU);
  std::vector<std::array<std::int64_t, 4>> all(static_cast<std::size_t>(comm->world_size()));
  for (std::size_t r = 0; r < all.size(); ++r)
    for (std::size_t k = 0; k < 4; ++k) all[r][k] = output[static_cast<std::int64_t>(4 * r + k)].item<std::int64_t>();
  return all;
}

// Rank 0, before anyone writes: an earlier save of this tag loses its manifest first, so until
// the new one is written the tag reads as an unfinished save, never as a mix of two saves.
void begin_tag(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw ck::unreadable(folder, "cannot be created (" + ec.message() + ")");
  ck::remove_file_quietly((fs::path(folder) / ck::kManifestFileName).string());
  ck::sync_folder(folder);
}

// Rank 0, once every rank has written its files: what else in the tag looks like a rank's file
// or a temporary is left from an interrupted or earlier save (and would make the tag mix two
// saves), and so are the temporaries of interrupted saves of other tags; then the manifest, and
// last `latest`.
void finish_tag(const std::string& dir, const std::string& folder, const ck::Manifest& m,
                const std::function<void(const std::string&)>& log) {
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (ck::is_temporary_name(name) || (ck::parse_checkpoint_file_name(name) && !m.find(name))) {
      ck::remove_file_quietly(e.path().string());
      log("[Rank 0] Removed " + e.path().string() + ", left by an interrupted or earlier save");
    }
  }
  for (const auto& tag : ck::checkpoint_tags(dir)) {
    const fs::path tag_folder = fs::path(dir) / tag;
    for (const auto& name : ck::remove_leftover_temporaries(tag_folder.string(), [](const std::string&) { return true; }))
      log("[Rank 0] Removed " + (tag_folder / name).string() + ", left by an interrupted save");
    std::error_code ec;  // a save interrupted before any file was complete leaves an empty folder
    if (fs::is_empty(tag_folder, ec) && fs::remove(tag_folder, ec))
      log("[Rank 0] Removed the empty folder " + tag_folder.string() + ", left by an interrupted save");
  }
  ck::write_manifest(folder, m);
  ck::remove_leftover_temporaries(dir, [](const std::string& name) { return name == "latest"; });
  ck::write_file_atomically((fs::path(dir) / "latest").string(), std::vector<char>(m.tag.begin(), m.tag.end()));
}

}  // namespace

ck::SaveDescription Engine::checkpoint_description(const std::string& client_state_json) const {
  ck::SaveDescription d;
  d.zero_stage = config_.zero.stage;
  d.world_size = options_.world_size;
  d.rank = options_.rank;
  d.model_dtype = checkpoint_dtype(model_dtype_);
  for (const auto& slot : runtime_->slots()) d.parameters.push_back({slot.name, slot.shape, 0, 0});
  ck::assign_offsets(d.parameters, "the model");
  d.shared = model_->tied_weights();
  d.global_steps = global_steps_;
  d.global_samples = global_samples_;
  d.skipped_steps = skipped_steps_;
  if (config_.scheduler.present) d.lr_last_batch_iteration = scheduler_->last_batch_iteration();
  d.optimizer_type = optimizer_->settings().type_name;
  d.release = options_.checkpoint_release;
  d.param_group_json = param_group_json(optimizer_->settings(), scheduler_->current_lr());
  d.optimizer_step = optimizer_->step_count();
  if (scaler_) {
    const auto& s = scaler_->state();
    d.loss_scaler = ck::LossScalerSnapshot{s.cur_scale, scaler_->dynamic(), s.cur_iter, s.last_overflow_iter, s.cur_hysteresis};
    const auto& f = config_.fp16;
    d.loss_scaler_settings = {f.loss_scale_window, f.min_loss_scale, f.hysteresis, f.consecutive_hysteresis};
  }
  d.clip_grad = config_.gradient_clipping;
  if (!options_.config_json.empty() && nlohmann::json::accept(options_.config_json)) d.ds_config_json = options_.config_json;
  d.client_state_json = client_state_json;
  d.shardscope_version = sessions::build_info().version;
  d.sub_group_size = config_.zero.sub_group_size;
  d.deepspeed_loss_scaler = options_.checkpoint_loss_scaler_objects;
  return d;
}

ck::FileDigest Engine::save_model_states(const std::string& folder, const ck::SaveDescription& d,
                                         const HostOptimizerState& held) {
  std::vector<torch::Tensor> keep;
  std::vector<const void*> weights;
  if (d.zero_stage < 3)
    for (const auto& slot : runtime_->slots()) {
      keep.push_back(cpu_contiguous(slot.param));
      weights.push_back(keep.back().data_ptr());
    }
  ck::WholeOptimizer whole;
  if (d.zero_stage == 0) {  // every rank holds the whole optimizer; its flat buffer in canonical order
    const auto canonical = [&](const torch::Tensor& buffer) {
      auto flat = cpu_fp32(buffer);
      auto out = torch::zeros({runtime_->layout().numel()}, torch::kFloat32);
      runtime_->layout().canonical_from_shard(flat.data_ptr<float>(), 0, out.data_ptr<float>());
      keep.push_back(out);
      return out.data_ptr<float>();
    };
    whole.master = canonical(held.master);
    for (const auto& [name, buffer] : held.state) whole.states.emplace_back(name, canonical(buffer));
  }
  const std::string path = (fs::path(folder) / ck::model_states_file_name(d.zero_stage, d.rank)).string();
  return ck::write_model_states(path, d, weights, d.zero_stage == 0 ? &whole : nullptr);
}

ck::FileDigest Engine::save_optimizer_state(const std::string& folder, const ck::SaveDescription& d,
                                            const HostOptimizerState& host_state) {
  // DeepSpeed's partition of this rank, assembled from every rank's engine shard (collective).
  Communicator* comm = communicator();
  const auto runs = ck::optimizer_part_runs(d);
  const std::int64_t part = ck::optimizer_part_numel(d), total = runtime_->layout().numel();
  const auto held = engine_shard_runs(runtime_->layout(), options_.rank);
  const torch::Device device = comm ? comm->device() : options_.device;
  const auto to_deepspeed = [&](const torch::Tensor& shard) {
    const auto values = cpu_fp32(shard);
    return repartition({{values.data_ptr<float>(), held}}, runs, part, total, comm, device);
  };
  const torch::Tensor master = to_deepspeed(host_state.master);
  std::vector<torch::Tensor> keep;
  std::vector<std::pair<std::string, const float*>> states;
  for (const auto& [name, buffer] : host_state.state) {
    keep.push_back(to_deepspeed(buffer));
    states.emplace_back(name, keep.back().data_ptr<float>());
  }
  const bool bf16 = config_.precision() == configs::PrecisionMode::kBf16;
  const std::string path = (fs::path(folder) / ck::optim_states_file_name(bf16, d.rank)).string();
  ck::FileDigest digest;
  on_every_rank(comm, "writing the optimizer files", [&] { digest = ck::write_optimizer_states(path, d, master.data_ptr<float>(), states); });
  return digest;
}

void Engine::save_checkpoint(const std::string& dir, std::optional<std::string> tag, const std::string& client_state_json) {
  const profiler::ScopedRange range(profiler::NvtxPhase::kCheckpointSave);
  const std::string chosen = tag.value_or(ck::default_checkpoint_tag(global_steps_));
  std::string why;
  if (!ck::is_valid_tag(chosen, &why))
    throw std::invalid_argument("checkpoint tag '" + ck::printable(chosen) + "' cannot be used: " + why);
  const std::string folder = (fs::path(dir) / chosen).string();
  Communicator* comm = communicator();
  const int rank = options_.rank, stage = config_.zero.stage;
  const bool bf16 = config_.precision() == configs::PrecisionMode::kBf16;
  ck::SaveDescription d = checkpoint_description(client_state_json);
  d.save_id = shared_save_id(comm, rank);
  on_every_rank(comm, "preparing " + folder, [&] {
    if (rank == 0) begin_tag(folder);
  });
  // An interrupted save of this rank left temporaries of its own files: they go now. Only the
  // names this rank writes: below stage 3 every rank's model-states name is rank 0's file, which
  // rank 0 may be writing at this moment.
  const bool writes_model = stage == 3 || rank == 0, writes_optim = stage >= 1;
  const std::string model_name = ck::model_states_file_name(stage, rank), optim_name = ck::optim_states_file_name(bf16, rank);
  ck::remove_leftover_temporaries(folder, [&](const std::string& name) {
    return (writes_model && name == model_name) || (writes_optim && name == optim_name);
  });
  std::optional<ck::FileDigest> model, optim;
  // This rank's master and state in host memory, wherever the placement keeps them (NVMe-swapped
  // state is read back), so a checkpoint always holds the whole optimizer state.
  const HostOptimizerState held = optimizer_state();
  if (writes_optim) optim = save_optimizer_state(folder, d, held);
  on_every_rank(comm, "writing the model states", [&] {
    if (writes_model) model = save_model_states(folder, d, held);
  });
  const auto digests = gather_digests(comm, model, optim);
  on_every_rank(comm, "finishing the save of " + folder, [&] {
    if (rank != 0) return;
    ck::Manifest m{d.save_id, chosen, global_steps_, options_.world_size, stage, d.shardscope_version, {}};
    for (std::size_t r = 0; r < digests.size(); ++r) {
      const auto& g = digests[r];
      const int owner = static_cast<int>(r);
      if (g[0] >= 0) m.files.push_back({ck::model_states_file_name(stage, owner), owner, static_cast<std::uint64_t>(g[0]),
                                        static_cast<std::uint32_t>(g[1])});
      if (g[2] >= 0) m.files.push_back({ck::optim_states_file_name(bf16, owner), owner, static_cast<std::uint64_t>(g[2]),
                                        static_cast<std::uint32_t>(g[3])});
    }
    finish_tag(dir, folder, m, [this](const std::string& line) { log(line); });
  });
  log("[Rank " + std::to_string(rank) + "] Saved checkpoint " + folder);
}

void Engine::load_optimizer_state(const ck::DeepSpeedCheckpoint& checkpoint) {
  const auto& s = checkpoint.summary();
  const auto& zero = *runtime_;
  // Parameters are matched by name, so a checkpoint of the same model loads at any stage and world size.
  std::map<std::string, std::size_t> slot_of;
  std::vector<std::int64_t> slot_offset;
  std::int64_t running = 0;
  for (std::size_t i = 0; i < zero.slots().size(); ++i) {
    slot_of[zero.slots()[i].name] = i;
    slot_offset.push_back(running);
    running += zero.slots()[i].numel;
  }
  std::vector<std::int64_t> target_offset;
  std::vector<bool> covered(zero.slots().size(), false);
  for (const auto& p : s.parameters) {
    auto it = slot_of.find(p.name);
    if (it == slot_of.end())
      throw std::runtime_error("checkpoint " + s.folder + " holds parameter '" + p.name + "', which this " + model_->kind() +
                               " model does not have: it was saved from another model");
    const auto& slot = zero.slots()[it->second];
    if (slot.shape != p.shape)
      throw std::runtime_error("checkpoint parameter '" + p.name + "' has shape " + c10::str(c10::IntArrayRef(p.shape)) +
                               ", the model expects " + c10::str(c10::IntArrayRef(slot.shape)));
    target_offset.push_back(slot_offset[it->second]);
    covered[it->second] = true;
  }
  for (std::size_t i = 0; i < covered.size(); ++i)
    if (!covered[i]) throw std::runtime_error("checkpoint " + s.folder + " has no parameter '" + zero.slots()[i].name + "'");
  for (const auto& [name, initial] : optimizer_state_layout(optimizer_->settings()))
    if (std::find(s.state_names.begin(), s.state_names.end(), name) == s.state_names.end())
      throw std::runtime_error("checkpoint " + s.folder + " holds the optimizer states (" +
                               [&] {
                                 std::string list;
                                 for (const auto& n : s.state_names) list += (list.empty() ? "" : ", ") + n;
                                 return list.empty() ? std::string("none") : list;
                               }() + "), but this run's " + optimizer_->settings().type_name + " needs '" + name + "'");
  Communicator* comm = communicator();
  const int world = collective(comm) ? comm->world_size() : 1, rank = options_.rank;
  const auto target = engine_shard_runs(zero.layout(), zero.sharded() ? rank : 0);
  const torch::Device device = comm ? comm->device() : options_.device;
  // Each saved rank's file is read by one rank (this one reads files rank, rank + world, ...).
  const auto load = [&](const std::string& buffer) {
    std::vector<ck::RankPart> parts;
    on_every_rank(comm, "reading " + s.folder, [&] {
      for (int f = rank; f < checkpoint.part_count(); f += world) parts.push_back(checkpoint.part(f, buffer));
    });
    std::vector<HeldPart> held;
    for (const auto& p : parts) held.push_back({p.values.data(), remap_runs(p.runs, s.parameters, target_offset)});
    return repartition(held, target, zero.layout().shard_numel(), zero.layout().numel(), comm, device);
  };
  torch::NoGradGuard no_grad;
  // fp32 master first, then the 16-bit weights from it (DeepSpeed's load_from_fp32_weights).
  // The placement's stores take them from host memory (an NVMe store writes its swap files).
  HostOptimizerState loaded;
  loaded.master = load("fp32").to(torch::kCPU);
  for (const auto& [name, initial] : optimizer_state_layout(optimizer_->settings()))
    loaded.state[name] = load(name).to(torch::kCPU);
  loaded.step_count = s.optimizer_step;
  place_optimizer_state(loaded);
  runtime_->after_optimizer_step();  // stages 1-2: all-gather the weights; stage 3: re-gather on use
}

std::string Engine::load_checkpoint(const std::string& dir, std::optional<std::string> tag) {
  std::string chosen;
  if (tag) {
    std::string why;
    if (!ck::is_valid_tag(*tag, &why))
      throw ck::unreadable(dir, "tag '" + ck::printable(*tag) + "' is not a tag of this directory: " + why);
    chosen = *tag;
  } else {
    const auto latest = ck::read_latest_tag(dir);
    if (!latest)
      throw ck::unreadable((fs::path(dir) / "latest").string(),
                           "does not exist: pass a tag, or point at a folder written by save_checkpoint");
    chosen = *latest;
  }
  const std::string folder = (fs::path(dir) / chosen).string();
  const ck::DeepSpeedCheckpoint checkpoint(folder);
  const auto& s = checkpoint.summary();
  load_optimizer_state(checkpoint);
  if (scaler_) {
    const auto saved = checkpoint.loss_scaler();
    if (!saved)
      throw std::runtime_error("checkpoint " + folder + " has no fp16 loss scaler state (it was saved in " + s.precision + ")");
    scaler_->load_state({saved->cur_scale, saved->cur_iter, saved->last_overflow_iter, static_cast<int>(saved->cur_hysteresis)});
  }
  // DeepSpeed's schedulers count from -1 and step once per optimizer step.
  scheduler_->set_last_batch_iteration(checkpoint.lr_last_batch_iteration().value_or(s.global_steps - 1));
  const std::int64_t samples = s.global_samples > 0 || s.global_steps == 0 ? s.global_samples
                                                                             : s.global_steps * train_batch_size();
  restore_counters(s.global_steps, samples, s.skipped_steps);
  zero_grad();
  const bool resharded = s.world_size != options_.world_size || s.zero_stage != config_.zero.stage;
  log("[Rank " + std::to_string(options_.rank) + "] Loaded checkpoint " + folder + " at step " +
      std::to_string(global_steps_) +
      (resharded ? " (saved by " + std::to_string(s.world_size) + " rank(s) at ZeRO stage " + std::to_string(s.zero_stage) +
                       ", resharded)"
                 : std::string()) +
      (s.written_by.rfind("DeepSpeed", 0) == 0 ? ", written by " + s.written_by : std::string()));
  return checkpoint.client_state();
}

}  // namespace shardscope::engine
