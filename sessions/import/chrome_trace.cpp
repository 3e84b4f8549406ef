#include "sessions/import/chrome_trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <istream>
#include <optional>
#include <streambuf>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "configs/input_file.hpp"

#include "sessions/import/chrome_trace_builder.hpp"
#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace {

// llround is unspecified outside int64's range: a float field of a corrupt trace saturates instead.
std::int64_t saturated_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<std::int64_t>(std::llround(v));
}

// Depths of the SAX pass: 1 the document, 2 traceEvents, 3 an event, 4 its args, 5 an args array.
constexpr int kEventDepth = 3, kArgsDepth = 4, kArgArrayDepth = 5;

// The keys read inside an event (its own at depth 3, its args' at 4), known by a code set once per
// key rather than by comparing texts at each value: a trace is mostly these keys.
enum class Key : std::uint8_t {
  kOther, kPh, kCat, kName, kTs, kDur, kTid, kId, kArgs, kDevice, kStream, kCorrelation, kBytes, kRegisters,
  kBandwidth, kExternalId, kSequenceNumber, kForwardThreadId, kInputDims, kGrid, kBlock
};

Key key_code(std::string_view k) {
  static constexpr std::pair<std::string_view, Key> kKeys[] = {
      {"ph", Key::kPh}, {"cat", Key::kCat}, {"name", Key::kName}, {"ts", Key::kTs}, {"dur", Key::kDur},
      {"tid", Key::kTid}, {"id", Key::kId}, {"args", Key::kArgs}, {"device", Key::kDevice},
      {"stream", Key::kStream}, {"correlation", Key::kCorrelation}, {"bytes", Key::kBytes},
      {"registers per thread", Key::kRegisters}, {"memory bandwidth (GB/s)", Key::kBandwidth},
      {"External id", Key::kExternalId}, {"Sequence number", Key::kSequenceNumber},
      {"Fwd thread id", Key::kForwardThreadId}, {"Input Dims", Key::kInputDims}, {"grid", Key::kGrid},
      {"block", Key::kBlock}};
  for (const auto& [name, code] : kKeys)
    if (k == name) return code;
  return Key::kOther;
}

class TraceSax {
 public:
  TraceSax(ChromeTrace& out, ChromeTraceBuilder& builder) : out_(out), builder_(builder) {}
  bool saw_trace_events = false;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(std::int64_t v) { return number(static_cast<double>(v), v); }
  bool number_unsigned(std::uint64_t v) {
    return number(static_cast<double>(v), v > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v));
  }
  bool number_float(double v, const std::string&) { return number(v, saturated_int64(v)); }
  bool string(std::string& v);
  bool binary(std::vector<std::uint8_t>&) { return true; }
  bool start_object(std::size_t) {
    ++depth_;
    if (in_events() && depth_ == kEventDepth) current_ = RawTraceEvent{};
    return true;
  }
  bool end_object() {
    if (in_events() && depth_ == kEventDepth) builder_.add(current_);  // converted now, kept only if used
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    if (depth_ == 2 && key_[1] == "traceEvents") saw_trace_events = events_array_ = true;
    if (in_args(kArgArrayDepth) && code_[kArgsDepth] == Key::kInputDims) in_dims_ = true;
    if (in_dims_) dims_append("[");
    return true;
  }
  bool end_array() {
    if (in_dims_ && !dims_cut_) current_.input_dims.push_back(']');
    if (in_dims_ && depth_ == kArgArrayDepth) in_dims_ = false, finish_dims();
    if (depth_ == 2) events_array_ = false;
    --depth_;
    return true;
  }
  bool key(std::string& k) {
    if (in_events() && (depth_ == kEventDepth || depth_ == kArgsDepth)) code_[depth_] = key_code(k);
    else if (depth_ < static_cast<int>(std::size(key_))) key_[depth_] = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_position = position;
    error_text = e.what();
    return false;
  }
  std::size_t error_position = 0;
  std::string error_text;

 private:
  bool in_events() const { return events_array_; }
  // Inside an event's "args", at `depth`.
  bool in_args(int depth) const { return in_events() && depth_ == depth && code_[kEventDepth] == Key::kArgs; }
  bool number(double v, std::int64_t i);
  // "Input Dims" ([[8, 16], [32, 16], [32]], nested deeper for tensor lists) rebuilt as compact
  // JSON while it streams by, up to kMaxShapesChars; the rest is dropped and "..." marks the cut.
  void dims_append(const char* token) {
    std::string& text = current_.input_dims;
    if (dims_cut_) return;
    if (!text.empty() && text.back() != '[') text.push_back(',');
    text += token;
    if (text.size() > kMaxShapesChars) dims_cut_ = true;
  }
  void finish_dims() {
    if (dims_cut_) current_.input_dims.resize(kMaxShapesChars - 3), current_.input_dims += "...";
    dims_cut_ = false;
  }
  ChromeTrace& out_;
  ChromeTraceBuilder& builder_;
  int depth_ = 0;
  bool events_array_ = false, in_dims_ = false, dims_cut_ = false;
  std::string key_[kEventDepth];                   // the document's keys (depths 1 and 2)
  Key code_[kArgsDepth + 1] = {};                 // an event's key (depth 3) and its args' (depth 4)
  RawTraceEvent current_;
};

bool TraceSax::string(std::string& v) {
  if (in_events() && depth_ == kEventDepth) {
    const Key k = code_[kEventDepth];
    if (k == Key::kPh) current_.ph = v;
    else if (k == Key::kCat) current_.cat = v;
    else if (k == Key::kName) current_.name = v;
  } else if (depth_ == 2 && key_[1] == "distributedInfo" && key_[2] == "backend") {
    out_.backend = v;
  }
  return true;
}

bool TraceSax::number(double v, std::int64_t i) {
  if (in_dims_) {
    dims_append(std::to_string(i).c_str());
  } else if (in_events() && depth_ == kEventDepth) {
    const Key k = code_[kEventDepth];
    if (k == Key::kTs) current_.ts_us = v;
    else if (k == Key::kDur) current_.dur_us = v;
    else if (k == Key::kTid) current_.tid = i;
    else if (k == Key::kId) current_.id = i;
  } else if (in_args(kArgsDepth)) {
    const Key k = code_[kArgsDepth];
    if (k == Key::kDevice) current_.device = i;
    else if (k == Key::kStream) current_.stream = i;
    else if (k == Key::kCorrelation) current_.correlation = i;
    else if (k == Key::kBytes) current_.bytes = i;
    else if (k == Key::kRegisters) current_.registers = i;
    else if (k == Key::kBandwidth) current_.bandwidth_gbps = v;
    else if (k == Key::kExternalId) current_.external_id = i;
    else if (k == Key::kSequenceNumber) current_.sequence_number = i;
    else if (k == Key::kForwardThreadId) current_.forward_thread_id = i;
  } else if (in_args(kArgArrayDepth) && (code_[kArgsDepth] == Key::kGrid || code_[kArgsDepth] == Key::kBlock)) {
    auto& dims = code_[kArgsDepth] == Key::kGrid ? current_.grid : current_.block;
    if (dims.size() < 3) dims.push_back(i);
  } else if (depth_ == 1 && key_[1] == "baseTimeNanoseconds") {
    out_.base_time_ns = i;
  } else if (depth_ == 2 && key_[1] == "distributedInfo") {
    if (key_[2] == "rank" && i >= 0 && i < (1 << 20)) out_.rank = static_cast<int>(i);
    if (key_[2] == "world_size" && i > 0 && i < (1 << 20)) out_.world_size = static_cast<int>(i);
  }
  return true;
}

}  // namespace

namespace {

// One SAX pass over `input` (a text's iterators or a stream) into the builder.
template <typename... Input>
void parse_pass(ChromeTrace& out, ChromeTraceBuilder& builder, const std::string& file, Input&&... input) {
  TraceSax sax(out, builder);
  const bool ok = nlohmann::json::sax_parse(std::forward<Input>(input)..., &sax);
  if (!ok)
    throw ImportError(file + ": byte " + std::to_string(sax.error_position) + ": not a valid Chrome trace JSON: " +
                      sax.error_text);
  if (!sax.saw_trace_events)
    throw ImportError(file + ": no \"traceEvents\" array at the top level; is this a PyTorch profiler trace "
                      "(prof.export_chrome_trace / tensorboard_trace_handler)?");
}

// A trace file read in 1 MiB buffers, reporting the bytes read as it goes (the import's progress).
// nlohmann's stream adapter takes each character by sbumpc(), an inline read of this buffer: an
// iterator pair or a custom adapter over the same buffer lexed no faster (1.7-2.0 s per 100 MB
// pass either way, docs/benchmarks.md "Traces at scale"); the lexer itself is the bound.
class ProgressFileBuffer : public std::streambuf {
 public:
  ProgressFileBuffer(const configs::InputFile& file, std::function<void(std::uint64_t)> on_read)
      : file_(file), on_read_(std::move(on_read)), buffer_(1u << 20) {}

 protected:
  int_type underflow() override {
    ssize_t n;
    do n = ::pread(file_.fd(), buffer_.data(), buffer_.size(), static_cast<off_t>(read_));
    while (n < 0 && errno == EINTR);
    if (n <= 0) return traits_type::eof();
    read_ += static_cast<std::uint64_t>(n);
    if (on_read_) on_read_(read_);
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  const configs::InputFile& file_;
  std::function<void(std::uint64_t)> on_read_;
  std::vector<char> buffer_;
  std::uint64_t read_ = 0;
};

void stream_pass(ChromeTrace& out, ChromeTraceBuilder& builder, const configs::InputFile& file,
                 const std::string& path, const ChromeTraceSink& sink, int pass) {
  std::function<void(std::uint64_t)> on_read;
  if (sink.progress) on_read = [&sink, &file, pass](std::uint64_t bytes) { sink.progress(bytes, file.size(), pass); };
  ProgressFileBuffer buffer(file, on_read);
  std::istream in(&buffer);
  parse_pass(out, builder, path, in);
}

std::string hex_byte(char c) {
  static const char* kHex = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(c);
  return {kHex[byte >> 4], kHex[byte & 15]};
}

// A trace is JSON: its first byte after white space opens an object or an array. Checked on the
// first 4 KiB, so a 2 GB file of something else is refused before it is read.
void check_trace_file(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    throw ImportError(path + ": gzip-compressed traces are not read directly; gunzip it first");
  const std::string head = read_file_from(path, 0, 4096);
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] != '{' && head[first] != '[')
    throw ImportError(path + ": not a Chrome trace: a trace is JSON starting with '{' or '[', this file starts with "
                             "byte 0x" + hex_byte(head[first]) + " at offset " + std::to_string(first) +
                      "; pass the .json the PyTorch profiler wrote (tensorboard_trace_handler or export_chrome_trace)");
}

// What the in-memory form keeps of a trace: everything, handed over once at the end.
struct KeptTrace {
  std::vector<ActivityRecord> activities;
  std::vector<NvtxRange> ranges;
  std::vector<ForwardLink> links;
};

ChromeTraceSink keeping_sink(KeptTrace& kept) {
  ChromeTraceSink sink;
  sink.batch_records = SIZE_MAX;
  sink.activities = [&kept](std::vector<ActivityRecord>& records) { kept.activities.swap(records); };
  sink.ranges = [&kept](std::vector<NvtxRange>& records) { kept.ranges.swap(records); };
  sink.links = [&kept](std::vector<ForwardLink>& links) { kept.links.insert(kept.links.end(), links.begin(), links.end()); };
  return sink;
}

void keep_sorted(ChromeTrace& out, KeptTrace& kept) {
  out.activities = std::move(kept.activities);
  out.ranges = std::move(kept.ranges);
  apply_forward_links(out.ranges, kept.links);
  std::stable_sort(out.activities.begin(), out.activities.end(),
                   [](const ActivityRecord& a, const ActivityRecord& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(out.ranges.begin(), out.ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
}

}  // namespace

ChromeTrace parse_chrome_trace(std::string_view json_text, const std::string& file, const ChromeTraceOptions& options) {
  ChromeTrace out;
  KeptTrace kept;
  ChromeTraceBuilder builder(out, options);
  parse_pass(out, builder, file, json_text.begin(), json_text.end());
  const ChromeTraceSink sink = keeping_sink(kept);
  builder.start_emitting(sink);
  parse_pass(out, builder, file, json_text.begin(), json_text.end());
  builder.finish();
  keep_sorted(out, kept);
  return out;
}

StreamedChromeTrace stream_chrome_trace(const std::string& path, const ChromeTraceSink& sink,
                                        const ChromeTraceOptions& options) {
  check_trace_file(path);
  StreamedChromeTrace result;
  ChromeTraceSink counting = sink;
  counting.activities = [&](std::vector<ActivityRecord>& r) { result.activities += r.size(), sink.activities(r); };
  counting.ranges = [&](std::vector<NvtxRange>& r) { result.ranges += r.size(), sink.ranges(r); };
  try {
    const configs::InputFile file(path, "trace file");
    ChromeTraceBuilder builder(result.trace, options);
    stream_pass(result.trace, builder, file, path, sink, 1);
    builder.start_emitting(counting);
    stream_pass(result.trace, builder, file, path, sink, 2);
    builder.finish();
  } catch (const configs::InputFileError& error) {
    throw ImportError(error.what());
  }
  return result;
}

ChromeTrace read_chrome_trace(const std::string& path, const ChromeTraceOptions& options) {
  KeptTrace kept;
  StreamedChromeTrace streamed = stream_chrome_trace(path, keeping_sink(kept), options);
  keep_sorted(streamed.trace, kept);
  return std::move(streamed.trace);
}

std::optional<int> rank_from_trace_file_name(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  auto digits_at = [&](std::size_t at) -> std::optional<int> {
    std::size_t end = at;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == at || end - at > 6) return std::nullopt;
    return std::stoi(name.substr(at, end - at));
  };
  for (std::size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    std::size_t digits = at + 4;
    while (digits < name.size() && (name[digits] == '_' || name[digits] == '-')) ++digits;
    if (auto rank = digits_at(digits)) return rank;
  }
  return std::nullopt;
}

}  // namespace shardscope::sessions
