#include "engine/oom_finding.hpp"

#include <cstdlib>
#include <regex>

#include "engine/memory_prediction.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate_options.hpp"
#include "estimator/fit_advice.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::engine {
namespace {

namespace est = estimator;

// "2.00 GiB", "512.00 MiB", "20.00 KiB", "12 bytes" before `suffix` (a regex), as bytes.
std::optional<double> size_before(const std::string& text, const std::string& prefix, const std::string& suffix) {
  const std::regex pattern(prefix + "([0-9.]+) ?(GiB|MiB|KiB|bytes|B)" + suffix);
  std::smatch m;
  if (!std::regex_search(text, m, pattern)) return std::nullopt;
  const double value = std::strtod(m[1].str().c_str(), nullptr);
  const std::string unit = m[2];
  const double scale = unit == "GiB" ? 1073741824.0 : unit == "MiB" ? 1048576.0 : unit == "KiB" ? 1024.0 : 1.0;
  return value * scale;
}

std::string gib(double bytes) { return est::format_bytes(bytes, est::ByteUnit::kGiB); }

void add_allocator_evidence(const AllocatorOomNumbers& n, std::string& evidence) {
  const std::pair<const char*, const std::optional<double>*> facts[] = {
      {"requested", &n.requested}, {"capacity", &n.capacity}, {"free", &n.free},
      {"allocated by PyTorch", &n.allocated}, {"reserved but unallocated", &n.reserved_unallocated}};
  for (const auto& [name, value] : facts)
    if (*value) evidence += std::string(evidence.empty() ? "" : "\n") + name + ": " + gib(**value);
}

// The fix: the cache's fragmentation first when it holds what was asked; else the smallest change
// the estimator says fits; else what it tried.
std::string suggested_fix(const AllocatorOomNumbers& n, const est::FitAdvice& advice) {
  std::string fix;
  if (n.reserved_unallocated && n.requested && *n.reserved_unallocated >= *n.requested)
    fix = "the allocator's cache holds enough but in pieces: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. ";
  if (advice.fits)
    return fix + "The estimator puts this plan at " + gib(advice.bound_bytes) + ", within " + gib(advice.usable_bytes) +
           " of this GPU: the memory went elsewhere (another process on the GPU, a larger batch or sequence than "
           "configured, fragmentation); check nvidia-smi for other processes";
  if (!advice.change)
    return fix + "no change the estimator knows fits " + gib(advice.capacity_bytes) + " GPUs (tried: " +
           std::to_string(advice.tried.size()) + " changes, down to micro-batch 1 with checkpointing, stage 3 and CPU "
           "offload): use more GPUs (ZeRO shards the states across them) or NVMe offload";
  std::string flags;
  for (const auto& f : advice.change->train_flags) flags += " " + f;
  return fix + advice.change->what + ": predicted " + gib(advice.change->bound_bytes) + " of " +
         gib(advice.usable_bytes) + " usable; rerun with" + flags;
}

}  // namespace

AllocatorOomNumbers parse_allocator_oom(const std::string& message) {
  AllocatorOomNumbers n;
  n.requested = size_before(message, "Tried to allocate ", "");
  n.capacity = size_before(message, "total capacity of ", " of which");
  n.free = size_before(message, " of which ", " is free");
  n.allocated = size_before(message, "Of the allocated memory ", " is allocated by PyTorch");
  n.reserved_unallocated = size_before(message, "and ", " is reserved by PyTorch but unallocated");
  return n;
}

sessions::Finding out_of_memory_finding(const std::string& message, const configs::ResolvedConfig& config,
                                        const ModelSpec& spec, int world_size, bool activation_checkpointing, int rank,
                                        std::int64_t step, double now) {
  const AllocatorOomNumbers n = parse_allocator_oom(message);
  sessions::Finding f;
  f.kind = "cuda_oom";
  f.severity = "error";
  f.first_step = f.last_step = step;
  f.ranks = {rank};
  f.found_at = now;
  f.summary = "rank " + std::to_string(rank) + " ran out of GPU memory in step " + std::to_string(step) +
              (n.requested ? " asking for " + gib(*n.requested) : "") +
              (n.free && n.capacity ? " (" + gib(*n.free) + " free of " + gib(*n.capacity) + ")" : "");
  add_allocator_evidence(n, f.evidence);
  if (!n.capacity) {
    f.suggested_fix = "the allocator's message gives no capacity: run `shardscope estimate --config CONFIG --gpu-mem "
                      "SIZE` with this run's model flags for the smallest plan that fits";
    return f;
  }
  est::FitAdvice advice;
  try {
    advice = est::advise_fit(run_model_description(spec),
                             run_estimate_options(config, spec, world_size, activation_checkpointing), *n.capacity);
  } catch (const std::exception& e) {  // the OOM is the news: a plan the estimator cannot judge must not hide it
    f.suggested_fix = std::string("the estimator could not judge this run (") + e.what() +
                      "): try a smaller micro-batch, activation checkpointing or a higher ZeRO stage";
    return f;
  }
  f.evidence += "\nestimator: this plan's device-level bound " + gib(advice.bound_bytes) + " against " +
                gib(advice.usable_bytes) + " usable (" + gib(advice.capacity_bytes) + " less the " +
                std::to_string(static_cast<int>(100 * (1 - advice.usable_bytes / advice.capacity_bytes) + 0.5)) +
                " % margin)";
  for (const auto& tried : advice.tried) f.evidence += "\nestimator tried: " + tried;
  f.suggested_fix = suggested_fix(n, advice);
  return f;
}

}  // namespace shardscope::engine
