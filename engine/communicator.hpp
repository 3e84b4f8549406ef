#pragma once
// The data-parallel communicator: c10d's ProcessGroupNCCL for CUDA tensors, ProcessGroupGloo for
// CPU tensors, rendezvous through c10d's TCPStore at MASTER_ADDR:MASTER_PORT with RANK and
// WORLD_SIZE as the DeepSpeed launcher and torchrun set them. Every collective works on flat
// buffers and is asynchronous (a CommHandle to wait on), so the engine can overlap it with
// compute. Where a backend lacks a collective (Gloo without _reduce_scatter_base or
// _allgather_base), an equivalent built from collectives it has runs behind the same call.
// A collective that does not finish in time throws CommTimeout naming the collective and the ranks
// that had not issued it: every rank numbers its collectives (all ranks issue the same ones in the
// same order) and a background thread publishes the count, the step and the latest collective to
// the store about once a second, off the critical path. The same thread streams the rank's
// collective flight record (collective_flight_record.hpp) to the collector when a sink is set.
// SHARDSCOPE_FAULT's collective faults (fault_injection.hpp) act here.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

#include "engine/collective_flight_record.hpp"

namespace c10d {
class Store;
}

namespace shardscope::sessions {
class EventSink;
}

namespace shardscope::engine {

/// Thrown when a collective fails or times out; the message names the collective, its size, the
/// timeout, and which ranks had not issued it (with their step, latest collective and when they
/// last reported).
class CommTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommunicatorOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  torch::Device device = torch::kCPU;  ///< CUDA: NCCL on device `device.index()`; CPU: Gloo
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
};

/// RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment (torchrun, the
/// DeepSpeed launcher, `shardscope launch`; OMPI_COMM_WORLD_*, PMI_* and SLURM_PROCID / SLURM_NTASKS /
/// SLURM_LOCALID for ranks started by mpirun or srun directly),
/// and the timeout from SHARDSCOPE_COMM_TIMEOUT (seconds) or DEEPSPEED_TIMEOUT (minutes).
/// Throws std::invalid_argument naming the variable that is malformed or missing.
CommunicatorOptions communicator_options_from_environment();

/// A rank's device from --device: auto (GPU LOCAL_RANK when CUDA is visible, else the CPU), cpu,
/// cuda (GPU LOCAL_RANK) or cuda:N. Throws std::invalid_argument naming the value.
torch::Device resolve_rank_device(const std::string& text, int local_rank);

/// Process-group timeout from SHARDSCOPE_COMM_TIMEOUT (seconds) or DEEPSPEED_TIMEOUT (minutes),
/// 10 minutes when neither is set.
std::chrono::milliseconds communicator_timeout_from_environment();

/// What a finished collective reports to an observer (the comms logger, the session).
struct CollectiveRecord {
  std::string op;             ///< "all_reduce", "reduce_scatter", "all_gather", "broadcast", "barrier"
  std::int64_t bytes = 0;     ///< message size as nccl-tests counts it (the larger buffer)
  double latency_ms = 0;      ///< issue to completion
  int world_size = 1;
  std::string tag;            ///< what the engine used it for ("grad bucket 3", "gather transformer.h.2")
};

class Communicator;

/// An issued collective. wait() blocks until its result may be used (for NCCL: until the current
/// CUDA stream is ordered after it) and rethrows its failure as CommTimeout.
class CommHandle {
 public:
  CommHandle() = default;
  void wait();
  bool valid() const { return static_cast<bool>(state_); }

 private:
  friend class Communicator;
  struct State;
  std::shared_ptr<State> state_;
};

enum class ReduceOp { kSum, kMax, kMin };

class Communicator {
 public:
  /// Rendezvous through a TCPStore (rank 0 hosts it) and creates the process group for
  /// options.device. Throws CommTimeout when the other ranks do not arrive within the timeout.
  static std::shared_ptr<Communicator> connect(const CommunicatorOptions& options);
  /// A communicator over an existing store (the tests' ranks in one process share a HashStore).
  Communicator(c10::intrusive_ptr<c10d::Store> store, const CommunicatorOptions& options);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  const torch::Device& device() const { return options_.device; }
  /// "nccl" or "gloo".
  std::string backend_name() const;

  /// In-place all-reduce of a contiguous tensor.
  CommHandle all_reduce(torch::Tensor tensor, ReduceOp op = ReduceOp::kSum, const std::string& tag = "");
  /// `input` (world_size x output.numel() elements) summed across ranks; this rank's chunk to `output`.
  CommHandle reduce_scatter(torch::Tensor output, torch::Tensor input, const std::string& tag = "");
  /// Every rank's `input` concatenated in rank order into `output` (world_size x input.numel()).
  CommHandle all_gather(torch::Tensor output, torch::Tensor input, const std::string& tag = "");
  /// `tensor` of rank `root` to every rank.
  CommHandle broadcast(torch::Tensor tensor, int root, const std::string& tag = "");
  /// Blocks until every rank arrives.
  void barrier();

  /// Ends the process group cleanly (destroy_process_group); no collective may follow.
  void shutdown();

  /// Synchronous scalar reductions (overflow flags, norms, losses for the log line).
  double all_reduce_scalar(double value, ReduceOp op);

  /// Called with every finished collective while set (the comms logger); timing a collective on
  /// CUDA then synchronizes the device, as DeepSpeed's timed collectives do.
  void set_observer(std::function<void(const CollectiveRecord&)> observer) { observer_ = std::move(observer); }

  /// Records this rank's step (the engine calls it once per step) for other ranks' timeout messages.
  void report_progress(std::int64_t step);
  /// Collectives this rank has issued so far.
  std::int64_t collectives_issued() const;
  /// Where in the step the next collectives are issued (the engine sets it per phase).
  void set_phase(CollectivePhase phase);
  /// This rank's latest collectives.
  const CollectiveFlightRecord& flight_record() const;
  /// Streams the flight record's enter and leave marks to `sink` from the reporter thread (at
  /// most a second late); null stops it. Only with more than one rank (no reporter otherwise).
  void set_mark_sink(std::shared_ptr<sessions::EventSink> sink);

  /// For each other rank that had not issued collective number `sequence` by its last report, a
  /// line saying where it was ("rank 1: at step 41, 117 collectives issued, the latest all_gather
  /// (gather transformer.h.3), reported 0.4 s ago"), read from the store.
  std::vector<std::string> ranks_not_arrived(std::int64_t sequence) const;

 private:
  struct Impl;
  friend class CommHandle;
  CommHandle new_handle(const char* op, std::int64_t bytes, const torch::Tensor& tensor, const std::string& tag);
  /// Whether SHARDSCOPE_FAULT skips collective `op` here; blocks forever when it hangs before it.
  bool faulted(const char* op);
  /// The step the next collective belongs to (1 = the first optimizer step).
  std::int64_t marks_step() const;
  void send_marks();
  /// Throws CommTimeout for failed collective number `sequence`, naming it and the ranks that had
  /// not issued it.
  [[noreturn]] void fail(const std::string& op, std::int64_t bytes, const std::string& tag, std::int64_t sequence,
                         const std::string& cause) const;
  void publish_progress();
  void stop_reporter();

  CommunicatorOptions options_;
  std::unique_ptr<Impl> impl_;
  std::function<void(const CollectiveRecord&)> observer_;
};

}  // namespace shardscope::engine
