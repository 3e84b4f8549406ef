#include "sessions/event_codec.hpp"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "sessions/errors.hpp"
#include "sessions/session_json.hpp"

namespace shardscope::sessions {
namespace {

// Little-endian fixed-width fields; strings are a u32 length then UTF-8 bytes. x86 and ARM
// servers are little-endian, so memcpy is the encoding; a big-endian host would swap here.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) { raw(&v, 2); }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void i32(std::int32_t v) { raw(&v, 4); }
  void i64(std::int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }

 private:
  std::string& out_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t size, const char* frame)
      : p_(data), end_(data + size), frame_(frame) {}
  std::uint8_t u8() { std::uint8_t v; take(&v, 1); return v; }
  std::uint16_t u16() { std::uint16_t v; take(&v, 2); return v; }
  std::uint32_t u32() { std::uint32_t v; take(&v, 4); return v; }
  std::int32_t i32() { std::int32_t v; take(&v, 4); return v; }
  std::int64_t i64() { std::int64_t v; take(&v, 8); return v; }
  double f64() { double v; take(&v, 8); return v; }
  /// A number the store keeps NOT NULL: NaN (stored as NULL) could never be committed, and the
  /// collector would retry its batch forever (found by collector_fuzzer).
  double required_f64(const char* field) {
    const double v = f64();
    if (std::isnan(v)) fail(std::string(field) + " is NaN");
    return v;
  }
  std::string str() {
    const std::uint32_t n = u32();
    if (n > static_cast<std::size_t>(end_ - p_)) fail("a string runs past the end of the frame");
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  /// A count of items each at least `min_item_bytes` long; rejects counts the frame cannot hold.
  std::uint32_t count(std::size_t min_item_bytes) {
    const std::uint32_t n = u32();
    if (static_cast<std::size_t>(n) * min_item_bytes > static_cast<std::size_t>(end_ - p_))
      fail("an item count exceeds the frame size");
    return n;
  }
  void bytes(void* out, std::size_t n) { take(out, n); }
  bool at_end() const { return p_ == end_; }
  void expect_end() {
    if (p_ != end_) fail("unexpected trailing bytes");
  }
  [[noreturn]] void fail(const std::string& what) {
    throw ProtocolError(std::string("malformed ") + frame_ + " frame: " + what);
  }

 private:
  void take(void* v, std::size_t n) {
    if (n > static_cast<std::size_t>(end_ - p_)) fail("truncated payload");
    std::memcpy(v, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
  const char* frame_;
};

// Optional doubles travel behind a presence bitmask so "not measured" survives the trip.
void optional_f64(Writer& w, const std::optional<double>& v) {
  if (v) w.f64(*v);
}

void write_step(Writer& w, const StepMetrics& s) {
  const std::optional<double> doubles[] = {s.step_time_ms, s.loss,          s.lr,
                                           s.loss_scale,   s.grad_norm,     s.samples_per_s,
                                           s.tokens_per_s, s.tflops};
  const std::optional<std::int64_t> ints[] = {s.mem_allocated_bytes, s.mem_reserved_bytes,
                                              s.mem_peak_bytes};
  std::uint16_t mask = 0;
  for (int i = 0; i < 8; ++i) mask |= doubles[i] ? (1u << i) : 0u;
  for (int i = 0; i < 3; ++i) mask |= ints[i] ? (1u << (8 + i)) : 0u;
  w.i32(s.rank);
  w.i64(s.step);
  w.f64(s.wall_time);
  w.u8(s.skipped ? 1 : 0);
  w.u16(mask);
  for (const auto& d : doubles) optional_f64(w, d);
  for (const auto& i : ints)
    if (i) w.i64(*i);
}

StepMetrics read_step(Reader& r) {
  StepMetrics s;
  s.rank = r.i32();
  s.step = r.i64();
  s.wall_time = r.f64();
  s.skipped = r.u8() != 0;
  const std::uint16_t mask = r.u16();
  std::optional<double>* doubles[] = {&s.step_time_ms, &s.loss,          &s.lr,
                                      &s.loss_scale,   &s.grad_norm,     &s.samples_per_s,
                                      &s.tokens_per_s, &s.tflops};
  std::optional<std::int64_t>* ints[] = {&s.mem_allocated_bytes, &s.mem_reserved_bytes,
                                         &s.mem_peak_bytes};
  for (int i = 0; i < 8; ++i)
    if (mask & (1u << i)) *doubles[i] = r.f64();
  for (int i = 0; i < 3; ++i)
    if (mask & (1u << (8 + i))) *ints[i] = r.i64();
  if (mask >> 11) r.fail("unknown bits in the field mask");
  return s;
}

void write_strings(Writer& w, const std::vector<std::string>& v) {
  w.u32(static_cast<std::uint32_t>(v.size()));
  for (const auto& s : v) w.str(s);
}

std::vector<std::string> read_strings(Reader& r) {
  std::vector<std::string> v(r.count(4));
  for (auto& s : v) s = r.str();
  return v;
}

void write_pairs(Writer& w, const std::vector<std::pair<std::string, std::string>>& pairs) {
  w.u32(static_cast<std::uint32_t>(pairs.size()));
  for (const auto& [key, value] : pairs) {
    w.str(key);
    w.str(value);
  }
}

std::vector<std::pair<std::string, std::string>> read_pairs(Reader& r) {
  std::vector<std::pair<std::string, std::string>> pairs(r.count(8));
  for (auto& [key, value] : pairs) {
    key = r.str();
    value = r.str();
  }
  return pairs;
}

void write_ranks(Writer& w, const std::vector<RankInfo>& ranks) {
  w.u32(static_cast<std::uint32_t>(ranks.size()));
  for (const auto& k : ranks) {
    w.i32(k.rank);
    w.i32(k.local_rank);
    w.str(k.host);
    w.i64(k.pid);
    w.str(k.device);
  }
}

std::vector<RankInfo> read_ranks(Reader& r) {
  std::vector<RankInfo> ranks(r.count(24));
  for (auto& k : ranks) {
    k.rank = r.i32();
    k.local_rank = r.i32();
    k.host = r.str();
    k.pid = r.i64();
    k.device = r.str();
  }
  return ranks;
}

void write_run_start(Writer& w, const RunStart& s) {
  w.str(s.name);
  w.f64(s.started_at);
  write_strings(w, s.command_line);
  w.str(s.config_json);
  w.str(s.config_hash);
  w.str(lenient_json_text(report_to_json(s.environment)));
  w.i32(s.world_size);
  write_ranks(w, s.ranks);
  w.f64(s.peak_tflops_per_gpu);
  write_strings(w, s.tags);
  write_pairs(w, s.environment_variables);  // protocol 3
}

RunStart read_run_start(Reader& r) {
  RunStart s;
  s.name = r.str();
  s.started_at = r.f64();
  s.command_line = read_strings(r);
  s.config_json = r.str();
  // The writer hashes the config as JSON: a frame whose config is not JSON could never be
  // committed, and the collector would retry its batch forever (found by collector_fuzzer).
  if (!s.config_json.empty() && !nlohmann::json::accept(s.config_json)) r.fail("the config is not valid JSON");
  s.config_hash = r.str();
  const std::string environment = r.str();
  try {
    s.environment = report_from_json(nlohmann::json::parse(environment));
  } catch (const std::exception& error) {
    r.fail(std::string("bad environment report: ") + error.what());
  }
  s.world_size = r.i32();
  s.ranks = read_ranks(r);
  s.peak_tflops_per_gpu = r.f64();
  s.tags = read_strings(r);
  s.environment_variables = read_pairs(r);
  return s;
}

void write_exit_codes(Writer& w, const std::vector<RankExit>& exits) {
  w.u32(static_cast<std::uint32_t>(exits.size()));
  for (const auto& x : exits) {
    w.i32(x.rank);
    w.i32(x.exit_code);
  }
}

std::vector<RankExit> read_exit_codes(Reader& r) {
  std::vector<RankExit> exits(r.count(8));
  for (auto& x : exits) {
    x.rank = r.i32();
    x.exit_code = r.i32();
  }
  return exits;
}

void write_host_report(Writer& w, const HostReport& h) {
  w.str(h.host);
  w.i32(h.node_rank);
  w.u8(static_cast<std::uint8_t>((h.clock_offset_s ? 1 : 0) | (h.clock_uncertainty_s ? 2 : 0)));
  optional_f64(w, h.clock_offset_s);
  optional_f64(w, h.clock_uncertainty_s);
  w.str(h.shardscope_version);
  w.str(h.git_hash);
  write_ranks(w, h.ranks);
  write_exit_codes(w, h.exit_codes);
}

void write_ints(Writer& w, const std::vector<int>& values) {
  w.u32(static_cast<std::uint32_t>(values.size()));
  for (int v : values) w.i32(v);
}

std::vector<int> read_ints(Reader& r) {
  std::vector<int> values(r.count(4));
  for (auto& v : values) v = r.i32();
  return values;
}

void write_collective_mark(Writer& w, const CollectiveMark& m) {
  w.i32(m.rank);
  w.str(m.group);
  write_ints(w, m.group_ranks);
  w.i64(m.sequence);
  w.str(m.op);
  w.i64(m.bytes);
  w.str(m.dtype);
  w.i64(m.step);
  w.str(m.phase);
  w.str(m.tag);
  w.f64(m.entered_at);
  w.u8(m.left_at ? 1 : 0);
  optional_f64(w, m.left_at);
}

CollectiveMark read_collective_mark(Reader& r) {
  CollectiveMark m;
  m.rank = r.i32();
  m.group = r.str();
  m.group_ranks = read_ints(r);
  m.sequence = r.i64();
  m.op = r.str();
  m.bytes = r.i64();
  m.dtype = r.str();
  m.step = r.i64();
  m.phase = r.str();
  m.tag = r.str();
  m.entered_at = r.required_f64("entered_at");
  const std::uint8_t mask = r.u8();
  if (mask > 1) r.fail("unknown bits in the left_at mask");
  if (mask & 1) m.left_at = r.required_f64("left_at");
  return m;
}

void write_finding(Writer& w, const Finding& f) {
  w.str(f.kind);
  w.str(f.severity);
  w.i64(f.first_step);
  w.i64(f.last_step);
  write_ints(w, f.ranks);
  w.str(f.summary);
  w.str(f.evidence);
  w.str(f.suggested_fix);
  w.f64(f.found_at);
}

Finding read_finding(Reader& r) {
  Finding f;
  f.kind = r.str();
  f.severity = r.str();
  f.first_step = r.i64();
  f.last_step = r.i64();
  f.ranks = read_ints(r);
  f.summary = r.str();
  f.evidence = r.str();
  f.suggested_fix = r.str();
  f.found_at = r.f64();
  if (f.kind.empty() || f.summary.empty()) r.fail("a finding needs a kind and a summary");
  return f;
}

HostReport read_host_report(Reader& r) {
  HostReport h;
  h.host = r.str();
  h.node_rank = r.i32();
  const std::uint8_t mask = r.u8();
  if (mask > 3) r.fail("unknown bits in the clock mask");
  if (mask & 1) h.clock_offset_s = r.f64();
  if (mask & 2) h.clock_uncertainty_s = r.f64();
  h.shardscope_version = r.str();
  h.git_hash = r.str();
  h.ranks = read_ranks(r);
  h.exit_codes = read_exit_codes(r);
  return h;
}

void write_activity(Writer& w, const ActivityRecord& a) {
  w.u8(static_cast<std::uint8_t>(a.kind));
  w.str(a.name);
  w.i64(a.start_ns);
  w.i64(a.end_ns);
  w.i32(a.device);
  w.i64(a.stream);
  w.i64(a.bytes);
  w.i64(a.step);
  // Protocol 2: a mask of the optional details, then the ones present.
  const std::uint8_t mask = (a.grid ? 1 : 0) | (a.block ? 2 : 0) | (a.registers_per_thread ? 4 : 0) |
                            (a.correlation_id ? 8 : 0) | (a.throughput_gbps ? 16 : 0);
  w.u8(mask);
  for (const auto* dim : {&a.grid, &a.block})
    if (*dim) w.i32((*dim)->x), w.i32((*dim)->y), w.i32((*dim)->z);
  if (a.registers_per_thread) w.i32(*a.registers_per_thread);
  if (a.correlation_id) w.i64(*a.correlation_id);
  if (a.throughput_gbps) w.f64(*a.throughput_gbps);
}

ActivityRecord read_activity(Reader& r) {
  ActivityRecord a;
  const std::uint8_t kind = r.u8();
  if (kind > 2) r.fail("unknown activity kind " + std::to_string(kind));
  a.kind = static_cast<ActivityKind>(kind);
  a.name = r.str();
  a.start_ns = r.i64();
  a.end_ns = r.i64();
  a.device = r.i32();
  a.stream = r.i64();
  a.bytes = r.i64();
  a.step = r.i64();
  const std::uint8_t mask = r.u8();
  if (mask > 31) r.fail("unknown activity detail bits " + std::to_string(mask));
  for (auto [bit, dim] : {std::pair{1, &a.grid}, std::pair{2, &a.block}})
    if (mask & bit) *dim = Dim3{r.i32(), r.i32(), r.i32()};
  if (mask & 4) a.registers_per_thread = r.i32();
  if (mask & 8) a.correlation_id = r.i64();
  if (mask & 16) a.throughput_gbps = r.f64();
  return a;
}

void write_nvtx(Writer& w, const NvtxRange& n) {
  w.str(n.name);
  w.str(n.domain);
  w.i64(n.start_ns);
  w.i64(n.end_ns);
  w.i32(n.device);
  w.i64(n.stream);
  w.i64(n.step);
}

NvtxRange read_nvtx(Reader& r) {
  NvtxRange n;
  n.name = r.str();
  n.domain = r.str();
  n.start_ns = r.i64();
  n.end_ns = r.i64();
  n.device = r.i32();
  n.stream = r.i64();
  n.step = r.i64();
  return n;
}

// The CPU operator details of an NvtxBatch (NvtxRange::shapes ... forward_op_id) follow its ranges
// as one block, written only when a range has some: a frame without them is byte for byte what
// every protocol-3 peer sends, and a reader of this build takes both. Per range, a mask of the
// details present, then those details.
void write_nvtx_details(Writer& w, const std::vector<NvtxRange>& ranges) {
  bool any = false;
  for (const auto& n : ranges) any = any || n.has_op_details();
  if (!any) return;
  for (const auto& n : ranges) {
    const std::uint8_t mask = (!n.shapes.empty() ? 1 : 0) | (n.external_id ? 2 : 0) | (n.sequence_number ? 4 : 0) |
                              (n.forward_thread_id ? 8 : 0) | (n.forward_op_id ? 16 : 0);
    w.u8(mask);
    if (!n.shapes.empty()) w.str(n.shapes);
    for (const auto* v : {&n.external_id, &n.sequence_number, &n.forward_thread_id, &n.forward_op_id})
      if (*v) w.i64(**v);
  }
}

void read_nvtx_details(Reader& r, std::vector<NvtxRange>& ranges) {
  if (r.at_end()) return;
  for (auto& n : ranges) {
    const std::uint8_t mask = r.u8();
    if (mask > 31) r.fail("unknown NVTX range detail bits " + std::to_string(mask));
    if (mask & 1) n.shapes = r.str();
    int bit = 2;
    for (auto* v : {&n.external_id, &n.sequence_number, &n.forward_thread_id, &n.forward_op_id}) {
      if (mask & bit) *v = r.i64();
      bit <<= 1;
    }
  }
}

struct PayloadWriter {
  Writer& w;
  void operator()(const RunStart& e) { write_run_start(w, e); }
  void operator()(const StepMetrics& e) { write_step(w, e); }
  void operator()(const TimerBreakdown& e) {
    w.i32(e.rank);
    w.i64(e.step);
    w.u32(static_cast<std::uint32_t>(e.timers.size()));
    for (const auto& t : e.timers) {
      w.str(t.name);
      w.f64(t.ms);
    }
  }
  void operator()(const CommRecord& e) {
    w.i32(e.rank);
    w.i64(e.step);
    w.str(e.op);
    w.i64(e.bytes);
    w.f64(e.latency_us);
    w.f64(e.algbw_gbps);
    w.f64(e.busbw_gbps);
    w.i32(e.group_size);
  }
  void operator()(const ActivityBatch& e) {
    w.i32(e.rank);
    w.u32(static_cast<std::uint32_t>(e.records.size()));
    for (const auto& a : e.records) write_activity(w, a);
  }
  void operator()(const NvtxBatch& e) {
    w.i32(e.rank);
    w.u32(static_cast<std::uint32_t>(e.ranges.size()));
    for (const auto& n : e.ranges) write_nvtx(w, n);
    write_nvtx_details(w, e.ranges);
  }
  void operator()(const LogLine& e) {
    w.i32(e.rank);
    w.f64(e.time);
    w.u8(static_cast<std::uint8_t>(e.level));
    w.str(e.text);
  }
  void operator()(const SeriesPoint& e) {
    w.i32(e.rank);
    w.i64(e.step);
    w.str(e.name);
    w.f64(e.value);
  }
  void operator()(const CommSummary& e) {
    w.i32(e.rank);
    w.str(e.op);
    w.i64(e.message_bytes);
    w.i64(e.count);
    for (double v : {e.total_latency_ms, e.avg_latency_ms, e.algbw_gbps, e.busbw_gbps}) w.f64(v);
  }
  void operator()(const SessionOrigin& e) {
    w.str(e.kind);
    w.str(e.details_json);
  }
  void operator()(const RunEnd& e) {
    w.str(e.status);
    w.f64(e.ended_at);
    w.f64(e.wall_time_s);
    write_exit_codes(w, e.exit_codes);
  }
  void operator()(const HostReport& e) { write_host_report(w, e); }
  void operator()(const CollectiveMark& e) { write_collective_mark(w, e); }
  void operator()(const Finding& e) { write_finding(w, e); }
};

// Reserves the length prefix, lets `body` append the type and payload, then fills the prefix in.
template <typename Body>
void frame(std::string& out, FrameType type, Body&& body) {
  const std::size_t start = out.size();
  out.append(4, '\0');
  Writer w(out);
  w.u8(static_cast<std::uint8_t>(type));
  body(w);
  const auto length = static_cast<std::uint32_t>(out.size() - start - 4);
  std::memcpy(&out[start], &length, 4);
}

Event read_event(FrameType type, Reader& r) {
  switch (type) {
    case FrameType::kRunStart: return read_run_start(r);
    case FrameType::kStepMetrics: return read_step(r);
    case FrameType::kTimerBreakdown: {
      TimerBreakdown e;
      e.rank = r.i32();
      e.step = r.i64();
      e.timers.resize(r.count(12));
      for (auto& t : e.timers) {
        t.name = r.str();
        t.ms = r.required_f64("a timer's ms");
      }
      return e;
    }
    case FrameType::kCommRecord: {
      CommRecord e;
      e.rank = r.i32();
      e.step = r.i64();
      e.op = r.str();
      e.bytes = r.i64();
      e.latency_us = r.required_f64("latency_us");
      e.algbw_gbps = r.f64();
      e.busbw_gbps = r.f64();
      e.group_size = r.i32();
      return e;
    }
    case FrameType::kActivityBatch: {
      ActivityBatch e;
      e.rank = r.i32();
      e.records.resize(r.count(49));
      for (auto& a : e.records) a = read_activity(r);
      return e;
    }
    case FrameType::kNvtxBatch: {
      NvtxBatch e;
      e.rank = r.i32();
      e.ranges.resize(r.count(44));
      for (auto& n : e.ranges) n = read_nvtx(r);
      read_nvtx_details(r, e.ranges);
      return e;
    }
    case FrameType::kLogLine: {
      LogLine e;
      e.rank = r.i32();
      e.time = r.f64();
      const std::uint8_t level = r.u8();
      if (level > 3) r.fail("unknown log level " + std::to_string(level));
      e.level = static_cast<LogLevel>(level);
      e.text = r.str();
      return e;
    }
    case FrameType::kRunEnd: {
      RunEnd e;
      e.status = r.str();
      e.ended_at = r.f64();
      e.wall_time_s = r.f64();
      e.exit_codes = read_exit_codes(r);
      return e;
    }
    case FrameType::kSeriesPoint: {
      SeriesPoint e;
      e.rank = r.i32();
      e.step = r.i64();
      e.name = r.str();
      e.value = r.f64();
      return e;
    }
    case FrameType::kCommSummary: {
      CommSummary e;
      e.rank = r.i32();
      e.op = r.str();
      e.message_bytes = r.i64();
      e.count = r.i64();
      for (double* v : {&e.total_latency_ms, &e.avg_latency_ms, &e.algbw_gbps, &e.busbw_gbps}) *v = r.f64();
      return e;
    }
    case FrameType::kSessionOrigin: {
      SessionOrigin e;
      e.kind = r.str();
      e.details_json = r.str();
      return e;
    }
    case FrameType::kHostReport: return read_host_report(r);
    case FrameType::kCollectiveMark: return read_collective_mark(r);
    case FrameType::kFinding: return read_finding(r);
    default: break;
  }
  r.fail("unknown frame type " + std::to_string(static_cast<int>(type)));
}

const char* frame_name(std::uint8_t type) {
  static const char* names[] = {"unknown",        "Hello",       "RunStart",      "StepMetrics",
                                "TimerBreakdown", "CommRecord",  "ActivityBatch", "NvtxBatch",
                                "LogLine",        "RunEnd",      "SeriesPoint",   "CommSummary",
                                "SessionOrigin",  "HostReport",  "Challenge",     "Welcome",
                                "CollectiveMark", "Finding"};
  return type < std::size(names) ? names[type] : names[0];
}

// The version comes right after the magic in every protocol, so a peer of another version is
// named as such instead of failing on a field that moved; the rest is read only when it matches.
Hello read_hello(Reader& r) {
  Hello h;
  if (r.u32() != kHelloMagic) r.fail("bad magic (not a ShardScope event stream)");
  h.protocol_version = r.u16();
  if (h.protocol_version != kProtocolVersion) return h;
  h.rank = r.i32();
  h.host = r.str();
  h.pid = r.i64();
  r.bytes(h.client_nonce.data(), h.client_nonce.size());
  r.bytes(h.proof.data(), h.proof.size());
  r.expect_end();
  return h;
}

Challenge read_challenge(Reader& r) {
  Challenge c;
  if (r.u32() != kHelloMagic) r.fail("bad magic (not a ShardScope collector)");
  c.protocol_version = r.u16();
  if (c.protocol_version != kProtocolVersion) return c;
  r.bytes(c.nonce.data(), c.nonce.size());
  r.expect_end();
  return c;
}

}  // namespace

std::string hello_identity_bytes(const Hello& hello) {
  std::string bytes;
  Writer w(bytes);
  w.i32(hello.rank);
  w.str(hello.host);
  w.i64(hello.pid);
  return bytes;
}

void encode_hello(const Hello& hello, std::string& out) {
  frame(out, FrameType::kHello, [&](Writer& w) {
    w.u32(kHelloMagic);
    w.u16(hello.protocol_version);
    const std::string identity = hello_identity_bytes(hello);
    w.raw(identity.data(), identity.size());
    w.raw(hello.client_nonce.data(), hello.client_nonce.size());
    w.raw(hello.proof.data(), hello.proof.size());
  });
}

void encode_challenge(const Challenge& challenge, std::string& out) {
  frame(out, FrameType::kChallenge, [&](Writer& w) {
    w.u32(kHelloMagic);
    w.u16(challenge.protocol_version);
    w.raw(challenge.nonce.data(), challenge.nonce.size());
  });
}

void encode_welcome(const Welcome& welcome, std::string& out) {
  frame(out, FrameType::kWelcome, [&](Writer& w) {
    w.str(welcome.session_uid);
    w.f64(welcome.server_time);
    w.raw(welcome.proof.data(), welcome.proof.size());
  });
}

void encode_event(const Event& event, std::string& out) {
  // Variant order = frame types 2..13, then (after the handshake's 14 and 15) 16 and up.
  const std::size_t index = event.index();
  const auto type = static_cast<FrameType>(index < 12 ? index + 2 : index + 4);
  frame(out, type, [&](Writer& w) { std::visit(PayloadWriter{w}, event); });
}

Frame decode_frame_payload(const char* data, std::size_t size) {
  if (size == 0) throw ProtocolError("malformed frame: empty (no type byte)");
  const auto type = static_cast<std::uint8_t>(data[0]);
  Reader r(data + 1, size - 1, frame_name(type));
  if (type == static_cast<std::uint8_t>(FrameType::kHello)) return read_hello(r);
  if (type == static_cast<std::uint8_t>(FrameType::kChallenge)) return read_challenge(r);
  if (type == static_cast<std::uint8_t>(FrameType::kWelcome)) {
    Welcome welcome;
    welcome.session_uid = r.str();
    welcome.server_time = r.f64();
    r.bytes(welcome.proof.data(), welcome.proof.size());
    r.expect_end();
    return welcome;
  }
  Event e = read_event(static_cast<FrameType>(type), r);
  r.expect_end();
  return e;
}

FrameDecoder::FrameDecoder(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

void FrameDecoder::feed(const char* data, std::size_t size) {
  // Compact once the decoded prefix dominates, so the buffer stays about one frame long.
  if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(data, size);
}

std::size_t FrameDecoder::pending_frame_bytes() const {
  if (buffered_bytes() < 4) return 0;
  std::uint32_t length;
  std::memcpy(&length, buffer_.data() + consumed_, 4);
  return length;
}

std::size_t FrameDecoder::checked_length() const {
  std::uint32_t length;
  std::memcpy(&length, buffer_.data() + consumed_, 4);
  if (length == 0 || length > max_frame_bytes_)
    throw ProtocolError("frame length " + std::to_string(length) + " is outside 1.." +
                        std::to_string(max_frame_bytes_) + " bytes (not a ShardScope event stream?)");
  return length;
}

std::optional<FrameHeader> FrameDecoder::pending_header() const {
  if (buffered_bytes() < 5) return std::nullopt;
  return FrameHeader{checked_length(), static_cast<std::uint8_t>(buffer_[consumed_ + 4])};
}

std::size_t FrameDecoder::bytes_wanted() const {
  if (buffered_bytes() < 5) return 5 - buffered_bytes();
  const std::size_t frame = 4 + checked_length();
  return buffered_bytes() < frame ? frame - buffered_bytes() : 0;
}

std::size_t max_records_in_frame(std::uint8_t type, std::size_t length) {
  // Smallest encoding of one record: read_event's count() arguments.
  switch (static_cast<FrameType>(type)) {
    case FrameType::kActivityBatch: return std::max<std::size_t>(1, length / 49);
    case FrameType::kNvtxBatch: return std::max<std::size_t>(1, length / 44);
    case FrameType::kTimerBreakdown: return std::max<std::size_t>(1, length / 12);
    default: return 1;
  }
}

bool FrameDecoder::next(Frame& out) {
  if (buffered_bytes() < 4) return false;
  const std::size_t length = checked_length();
  if (buffered_bytes() < 4 + length) return false;
  const char* payload = buffer_.data() + consumed_ + 4;
  consumed_ += 4 + length;
  out = decode_frame_payload(payload, length);
  return true;
}

}  // namespace shardscope::sessions
