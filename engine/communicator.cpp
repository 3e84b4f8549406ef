#include "engine/communicator.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <mutex>
#include <sstream>
#include <thread>

#include <torch/cuda.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "sessions/event_sink.hpp"

#include "engine/fault_injection.hpp"
#include "sessions/net_address.hpp"

#ifdef SHARDSCOPE_TORCH_HAS_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace shardscope::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::optional<long> env_long(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0)
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + text +
                                "' is not a non-negative integer");
  return value;
}

// SHARDSCOPE_FLIGHT_RECORD=0 turns the collective flight record (and so the live hang diagnosis)
// off; it exists to measure the record's cost against a run without it (docs/doctor.md).
bool flight_record_enabled() {
  const char* text = std::getenv("SHARDSCOPE_FLIGHT_RECORD");
  if (!text || !*text || std::string(text) == "1") return true;
  if (std::string(text) == "0") return false;
  throw std::invalid_argument(std::string("environment variable SHARDSCOPE_FLIGHT_RECORD='") + text +
                              "' is not 0 or 1 (0 turns the collective flight record off, to measure its cost)");
}

// The first of `names` that is set (torchrun / DeepSpeed names first, then Open MPI's and PMI's).
std::optional<long> first_env(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (auto value = env_long(name)) return value;
  return std::nullopt;
}

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return c10d::ReduceOp::MAX;
    case ReduceOp::kMin: return c10d::ReduceOp::MIN;
    case ReduceOp::kSum: break;
  }
  return c10d::ReduceOp::SUM;
}

std::string mib(std::int64_t bytes) {
  std::ostringstream s;
  s.precision(3);
  s << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

std::int64_t nbytes(const torch::Tensor& t) { return t.numel() * static_cast<std::int64_t>(t.element_size()); }

bool not_supported(const c10::Error& e) {
  const std::string what = e.what();
  return what.find("not support") != std::string::npos || what.find("unsupported") != std::string::npos ||
         what.find("does not implement") != std::string::npos;
}

}  // namespace

torch::Device resolve_rank_device(const std::string& text, int local_rank) {
  if (text == "auto")
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, local_rank) : torch::Device(torch::kCPU);
  if (text == "cuda" && !torch::cuda::is_available())
    throw std::invalid_argument("--device cuda: no CUDA device is visible here (see `shardscope report`)");
  if (text == "cuda") return torch::Device(torch::kCUDA, local_rank);
  try {
    return torch::Device(text);
  } catch (const std::exception&) {
    throw std::invalid_argument("--device '" + text + "' is not auto, cpu, cuda or cuda:N");
  }
}

std::chrono::milliseconds communicator_timeout_from_environment() {
  if (auto seconds = env_long("SHARDSCOPE_COMM_TIMEOUT")) return std::chrono::seconds(*seconds);
  if (auto minutes = env_long("DEEPSPEED_TIMEOUT")) return std::chrono::minutes(*minutes);
  return std::chrono::minutes(10);
}

CommunicatorOptions communicator_options_from_environment() {
  CommunicatorOptions o;
  o.rank = static_cast<int>(first_env({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}).value_or(0));
  o.world_size =
      static_cast<int>(first_env({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}).value_or(1));
  o.local_rank = static_cast<int>(
      first_env({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}).value_or(0));
  if (o.world_size < 1) throw std::invalid_argument("WORLD_SIZE must be at least 1");
  if (o.rank >= o.world_size)
    throw std::invalid_argument("RANK=" + std::to_string(o.rank) + " is not below WORLD_SIZE=" +
                                std::to_string(o.world_size));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) o.master_addr = addr;
  else if (o.world_size > 1)
    throw std::invalid_argument("MASTER_ADDR is not set: start the ranks with `shardscope launch`, "
                                "torchrun or the deepspeed launcher, or export MASTER_ADDR and MASTER_PORT");
  if (auto port = env_long("MASTER_PORT")) {
    if (*port == 0 || *port > 65535) throw std::invalid_argument("MASTER_PORT must be 1-65535");
    o.master_port = static_cast<int>(*port);
  } else if (o.world_size > 1) {
    throw std::invalid_argument("MASTER_PORT is not set (the DeepSpeed launcher's default is 29500)");
  }
  o.timeout = communicator_timeout_from_environment();
  return o;
}

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  bool nccl = false;
  bool has_reduce_scatter_base = true, has_allgather_base = true;

  // Progress for other ranks' timeout messages: written on the issuing path (an atomic and a
  // short lock), published to the store by `reporter` only.
  std::atomic<std::int64_t> issued{0}, step{-1};
  std::mutex latest_mutex;
  std::string latest;  ///< the latest collective issued, as "op (tag)"
  std::thread reporter;
  std::mutex reporter_mutex;
  std::condition_variable reporter_wake;
  bool reporter_stop = false;

  // The doctor's view (docs/doctor.md): the flight record, the phase the engine is in, the
  // fault SHARDSCOPE_FAULT names for this rank, and where marks go.
  CollectiveFlightRecord flight;
  bool flight_on = flight_record_enabled();  ///< off only to measure its cost
  std::atomic<CollectivePhase> phase{CollectivePhase::kSetup};
  std::optional<FaultSpec> fault;
  std::atomic<bool> fault_fired{false};
  std::mutex sink_mutex;
  std::shared_ptr<sessions::EventSink> mark_sink;
};

namespace {

std::string progress_key(int rank) { return "progress/" + std::to_string(rank); }

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string describe(const std::string& op, const std::string& tag) { return tag.empty() ? op : op + " (" + tag + ")"; }

}  // namespace

struct CommHandle::State {
  c10::intrusive_ptr<c10d::Work> work;
  Communicator* owner = nullptr;
  std::string op, tag;
  std::int64_t bytes = 0;
  Clock::time_point issued;
  std::function<void()> after;  ///< completes a fallback (copies this rank's chunk)
  std::int64_t sequence = 0;    ///< this rank's number for the collective (the same on every rank)
  bool done = false;
};

void CommHandle::wait() {
  if (!state_ || state_->done) return;
  State& s = *state_;
  s.done = true;
  Communicator& c = *s.owner;
  try {
    if (s.work) s.work->wait(c.options_.timeout);
  } catch (const std::exception& e) {
    c.fail(s.op, s.bytes, s.tag, s.sequence, e.what());
  }
  if (c.impl_->flight_on) c.impl_->flight.leave(s.sequence);
  if (s.after) s.after();
  if (c.observer_) {
#ifdef SHARDSCOPE_TORCH_HAS_NCCL
    if (c.impl_->nccl) c10::cuda::device_synchronize();
#endif
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - s.issued).count();
    c.observer_({s.op, s.bytes, ms, c.world_size(), s.tag});
  }
}

namespace {

// c10d's TCPStore binds its server to every interface (TCPStoreOptions has no address), so rank 0
// binds the socket to MASTER_ADDR itself and hands it over: the rendezvous is reachable only on
// the address the run uses.
int bind_store_socket(const CommunicatorOptions& o) {
  const int fd = sessions::bind_listener(o.master_addr, o.master_port);
  if (fd >= 0) return fd;
  const int error = errno;
  if (error == EADDRINUSE)
    throw CommTimeout("rank 0 cannot listen on " + o.master_addr + ":" + std::to_string(o.master_port) +
                      ": the port is in use. Another run may hold it; choose a free one with "
                      "--master_port (or MASTER_PORT).");
  throw CommTimeout("rank 0 cannot listen on MASTER_ADDR " + o.master_addr + ":" + std::to_string(o.master_port) +
                    ": " + std::strerror(error) + " (MASTER_ADDR must be an address of rank 0's machine)");
}

// Gloo's pairs listen on the address of its device. The default device binds to whatever this
// machine's host name resolves to (often every node's own name, or loopback); bind it instead to
// the address that faces MASTER_ADDR, unless GLOO_SOCKET_IFNAME names an interface.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  try {
    return c10d::ProcessGroupGloo::createDeviceForHostname(sessions::local_address_toward(master_addr));
  } catch (const sessions::NoRouteError&) {
    return c10d::ProcessGroupGloo::createDefaultDevice();
  }
}

}  // namespace

std::shared_ptr<Communicator> Communicator::connect(const CommunicatorOptions& o) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(o.master_port);
  store_options.isServer = o.rank == 0;
  store_options.numWorkers = o.world_size;
  store_options.waitWorkers = true;
  store_options.timeout = o.timeout;
  if (store_options.isServer) store_options.masterListenFd = bind_store_socket(o);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(o.master_addr, store_options);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("EADDRINUSE") != std::string::npos || what.find("address already in use") != std::string::npos)
      throw CommTimeout("rank 0 cannot listen on " + o.master_addr + ":" + std::to_string(o.master_port) +
                        ": the port is in use. Another run may hold it; choose a free one with "
                        "--master_port (or MASTER_PORT).");
    throw CommTimeout("rank " + std::to_string(o.rank) + " could not meet the other " +
                      std::to_string(o.world_size - 1) + " rank(s) at " + o.master_addr + ":" +
                      std::to_string(o.master_port) + " within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(o.timeout).count()) +
                      " s: " + what);
  }
  return std::make_shared<Communicator>(store, o);
}

Communicator::Communicator(c10::intrusive_ptr<c10d::Store> store, const CommunicatorOptions& options)
    : options_(options), impl_(std::make_unique<Impl>()) {
  impl_->fault = fault_for_rank(options_.rank);  // a malformed SHARDSCOPE_FAULT stops the rank here
  impl_->store = c10::make_intrusive<c10d::PrefixStore>("shardscope", store);
  if (options_.device.is_cuda()) {
#ifdef SHARDSCOPE_TORCH_HAS_NCCL
    c10::cuda::set_device(options_.device.index());
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = options_.timeout;
    impl_->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, options_.rank,
                                                                  options_.world_size, nccl_options);
    impl_->nccl = true;
#else
    throw std::invalid_argument("this build has no NCCL: train on the CPU (--device cpu) or rebuild with CUDA");
#endif
  } else {
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options_.timeout);
    gloo_options->devices.push_back(gloo_device(options_.master_addr));
    impl_->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, options_.rank,
                                                                  options_.world_size, gloo_options);
  }
  if (options_.world_size > 1) {
    publish_progress();
    // Often enough that a report is fresh long before any collective times out.
    const auto period = std::clamp<std::chrono::milliseconds>(options_.timeout / 20, std::chrono::milliseconds(50),
                                                              std::chrono::seconds(1));
    impl_->reporter = std::thread([this, period] {
      std::unique_lock<std::mutex> lock(impl_->reporter_mutex);
      while (!impl_->reporter_wake.wait_for(lock, period, [this] { return impl_->reporter_stop; })) {
        lock.unlock();
        try {
          publish_progress();
          send_marks();
        } catch (const std::exception&) {
          // The store is gone (rank 0 exited): nothing left to tell.
        }
        lock.lock();
      }
    });
  }
}

Communicator::~Communicator() { stop_reporter(); }

void Communicator::stop_reporter() {
  if (!impl_->reporter.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->reporter_mutex);
    impl_->reporter_stop = true;
  }
  impl_->reporter_wake.notify_all();
  impl_->reporter.join();
}

void Communicator::publish_progress() {
  std::string latest;
  {
    std::lock_guard<std::mutex> lock(impl_->latest_mutex);
    latest = impl_->latest;
  }
  // "issued step unix_ms latest": the latest collective's text last, since it may hold spaces.
  impl_->store->set(progress_key(options_.rank), std::to_string(impl_->issued.load()) + " " +
                                                     std::to_string(impl_->step.load()) + " " +
                                                     std::to_string(unix_ms()) + " " + latest);
}

std::string Communicator::backend_name() const { return impl_->nccl ? "nccl" : "gloo"; }

void Communicator::fail(const std::string& op, std::int64_t bytes, const std::string& tag, std::int64_t sequence,
                        const std::string& cause) const {
  std::ostringstream m;
  m << op << (tag.empty() ? "" : " (" + tag + ")") << " of " << mib(bytes) << " on rank " << options_.rank
    << " did not complete (" << backend_name() << ", timeout "
    << std::chrono::duration_cast<std::chrono::seconds>(options_.timeout).count() << " s; collective #" << sequence
    << " of this rank, at step " << impl_->step.load() << ")";
  try {
    const auto missing = ranks_not_arrived(sequence);
    if (missing.empty()) {
      m << "; every rank had issued it: it hung inside the collective, or behind work queued before it on a "
           "rank's device (see the cause)";
    } else {
      m << "; rank(s) that had not issued it:";
      for (const auto& line : missing) m << "\n  " << line;
    }
  } catch (const std::exception&) {
    m << "; the rendezvous store is gone too (rank 0 may have exited)";
  }
  m << "\nCause: " << cause
    << "\nRaise the timeout with SHARDSCOPE_COMM_TIMEOUT=<seconds> if a rank is legitimately slow.";
  throw CommTimeout(m.str());
}

void Communicator::report_progress(std::int64_t step) { impl_->step = step; }

std::int64_t Communicator::collectives_issued() const { return impl_->issued.load(); }

std::vector<std::string> Communicator::ranks_not_arrived(std::int64_t sequence) const {
  std::vector<std::string> lines;
  const auto now = unix_ms();
  for (int r = 0; r < options_.world_size; ++r) {
    if (r == options_.rank) continue;
    const std::string key = progress_key(r);
    if (!impl_->store->check({key})) {
      lines.push_back("rank " + std::to_string(r) + ": never reported (it may not have started)");
      continue;
    }
    const auto bytes = impl_->store->get(key);
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    std::int64_t issued = 0, step = -1, at = 0;
    in >> issued >> step >> at;
    if (issued >= sequence) continue;  // it issued this collective: not the one missing
    std::string latest;
    std::getline(in >> std::ws, latest);
    std::ostringstream line;
    line.precision(1);
    line << std::fixed << "rank " << r << ": at step " << step << ", " << issued << " collective(s) issued"
         << (latest.empty() ? "" : ", the latest " + latest) << ", reported "
         << static_cast<double>(now - at) / 1000.0 << " s ago";
    if (now - at > 10'000) line << " (no report since: the process may have died or be stopped)";
    lines.push_back(line.str());
  }
  return lines;
}

void Communicator::set_phase(CollectivePhase phase) { impl_->phase = phase; }

const CollectiveFlightRecord& Communicator::flight_record() const { return impl_->flight; }

void Communicator::set_mark_sink(std::shared_ptr<sessions::EventSink> sink) {
  std::lock_guard<std::mutex> lock(impl_->sink_mutex);
  impl_->mark_sink = std::move(sink);
}

std::int64_t Communicator::marks_step() const {
  const std::int64_t done = impl_->step.load();  // steps completed; -1 before the first report
  return done < 0 ? 1 : done + 1;
}

void Communicator::send_marks() {
  std::shared_ptr<sessions::EventSink> sink;
  {
    std::lock_guard<std::mutex> lock(impl_->sink_mutex);
    sink = impl_->mark_sink;
  }
  if (!sink) return;
  const auto marks = impl_->flight.take_marks(options_.rank);
  if (marks.empty()) return;
  for (const auto& mark : marks) sink->send(mark);
  sink->flush();  // a hang must be visible now, not when a buffer fills
}

bool Communicator::faulted(const char* op) {
  if (!impl_->fault || impl_->fault_fired.load() || !collective_fault_applies(*impl_->fault, op, marks_step()))
    return false;
  if (impl_->fault_fired.exchange(true)) return false;
  const std::string what = "rank " + std::to_string(options_.rank) + " at step " + std::to_string(marks_step()) +
                           ", before collective #" + std::to_string(impl_->issued.load() + 1) + " (" + op + ")";
  if (impl_->fault->kind == FaultKind::kHangBeforeCollective) hang_forever(what);
  std::cerr << "shardscope: " << kFaultVariable << ": " << what << ": skipped" << std::endl;
  return true;
}

// One place builds a handle so that every collective is timed, named and recorded the same way.
CommHandle Communicator::new_handle(const char* op, std::int64_t bytes, const torch::Tensor& tensor,
                                    const std::string& tag) {
  CommHandle handle;
  handle.state_ = std::make_shared<CommHandle::State>();
  handle.state_->owner = this;
  handle.state_->op = op;
  handle.state_->tag = tag;
  handle.state_->bytes = bytes;
  handle.state_->issued = Clock::now();
  handle.state_->sequence = ++impl_->issued;
  if (impl_->flight_on)
    impl_->flight.enter(handle.state_->sequence, op, bytes, c10::toString(tensor.scalar_type()), tag, marks_step(),
                        impl_->phase.load());
  {
    std::lock_guard<std::mutex> lock(impl_->latest_mutex);
    impl_->latest = describe(op, tag);
  }
  return handle;
}

CommHandle Communicator::all_reduce(torch::Tensor tensor, ReduceOp op, const std::string& tag) {
  TORCH_CHECK(tensor.is_contiguous(), "all_reduce needs a contiguous tensor");
  if (faulted("all_reduce")) return CommHandle{};
  CommHandle handle = new_handle("all_reduce", nbytes(tensor), tensor, tag);
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions opts;
  opts.reduceOp = to_c10d(op);
  try {
    handle.state_->work = impl_->backend->allreduce(tensors, opts);
  } catch (const std::exception& e) {
    fail("all_reduce", nbytes(tensor), tag, handle.state_->sequence, e.what());
  }
  return handle;
}

CommHandle Communicator::reduce_scatter(torch::Tensor output, torch::Tensor input, const std::string& tag) {
  TORCH_CHECK(input.is_contiguous() && output.is_contiguous(), "reduce_scatter needs contiguous tensors");
  if (faulted("reduce_scatter")) return CommHandle{};
  TORCH_CHECK(input.numel() == output.numel() * world_size(), "reduce_scatter: input has ", input.numel(),
              " elements, expected world_size x ", output.numel());
  CommHandle handle = new_handle("reduce_scatter", nbytes(input), input, tag);
  try {
    if (impl_->has_reduce_scatter_base) {
      try {
        handle.state_->work = impl_->backend->_reduce_scatter_base(output, input, c10d::ReduceScatterOptions{});
        return handle;
      } catch (const c10::Error& e) {
        if (!not_supported(e)) throw;
        impl_->has_reduce_scatter_base = false;
      }
    }
    // Fallback: all-reduce a copy of the input and keep this rank's chunk (same result, more bytes).
    auto scratch = input.clone();
    std::vector<at::Tensor> tensors{scratch};
    handle.state_->work = impl_->backend->allreduce(tensors, c10d::AllreduceOptions{});
    const auto chunk = output.numel(), offset = chunk * rank();
    handle.state_->after = [output, scratch, chunk, offset]() mutable {
      output.copy_(scratch.narrow(0, offset, chunk));
    };
  } catch (const std::exception& e) {
    fail("reduce_scatter", nbytes(input), tag, handle.state_->sequence, e.what());
  }
  return handle;
}

CommHandle Communicator::all_gather(torch::Tensor output, torch::Tensor input, const std::string& tag) {
  TORCH_CHECK(input.is_contiguous() && output.is_contiguous(), "all_gather needs contiguous tensors");
  if (faulted("all_gather")) return CommHandle{};
  TORCH_CHECK(output.numel() == input.numel() * world_size(), "all_gather: output has ", output.numel(),
              " elements, expected world_size x ", input.numel());
  CommHandle handle = new_handle("all_gather", nbytes(output), output, tag);
  try {
    if (impl_->has_allgather_base) {
      try {
        handle.state_->work = impl_->backend->_allgather_base(output, input, c10d::AllgatherOptions{});
        return handle;
      } catch (const c10::Error& e) {
        if (!not_supported(e)) throw;
        impl_->has_allgather_base = false;
      }
    }
    // Fallback: the list form of allgather, each output a view into the flat output buffer.
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world_size(); ++r) outputs[0].push_back(output.narrow(0, r * input.numel(), input.numel()));
    std::vector<at::Tensor> inputs{input};
    handle.state_->work = impl_->backend->allgather(outputs, inputs, c10d::AllgatherOptions{});
  } catch (const std::exception& e) {
    fail("all_gather", nbytes(output), tag, handle.state_->sequence, e.what());
  }
  return handle;
}

CommHandle Communicator::broadcast(torch::Tensor tensor, int root, const std::string& tag) {
  TORCH_CHECK(tensor.is_contiguous(), "broadcast needs a contiguous tensor");
  if (faulted("broadcast")) return CommHandle{};
  CommHandle handle = new_handle("broadcast", nbytes(tensor), tensor, tag);
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  try {
    handle.state_->work = impl_->backend->broadcast(tensors, opts);
  } catch (const std::exception& e) {
    fail("broadcast", nbytes(tensor), tag, handle.state_->sequence, e.what());
  }
  return handle;
}

void Communicator::barrier() {
  if (world_size() == 1) return;
  // A one-element all-reduce on the group's device: NCCL's barrier has to guess a device otherwise.
  auto token = torch::zeros({1}, torch::TensorOptions().device(options_.device));
  all_reduce(token, ReduceOp::kSum, "barrier").wait();
  if (impl_->nccl) token.item<float>();
}

void Communicator::shutdown() {
  stop_reporter();
  if (impl_->backend) impl_->backend->shutdown();
}

double Communicator::all_reduce_scalar(double value, ReduceOp op) {
  if (world_size() == 1) return value;
  auto t = torch::full({1}, value, torch::TensorOptions().dtype(torch::kFloat64).device(options_.device));
  all_reduce(t, op, "scalar").wait();
  return t.item<double>();
}

}  // namespace shardscope::engine
