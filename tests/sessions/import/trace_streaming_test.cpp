// Traces at scale (issue 35 item 5): a trace streamed from its file in batches gives exactly what
// the in-memory parse gives (records, steps, forward/backward links), the import writes it batch by
// batch with the links set in the store, and progress is reported per pass with the bytes read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sessions/import/chrome_trace.hpp"
#include "sessions/import/deepspeed_import.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

namespace fs = std::filesystem;

// `steps` steps of a Kineto-shaped trace (the fixtures' shape, scripts/make_kineto_traces.py's at
// small size): a step window, a forward op with a nested op and a fwdbwd flow start, a kernel
// launched for it, the backward op the flow ends in, and the GPU's step window; base time last.
std::string kineto_trace(int steps, int rank) {
  std::string events;
  for (int s = 0; s < steps; ++s) {
    const double t = 1000.0 + s * 1000.0;
    const int ext = 10 * s + 1;
    auto at = [t](double dt) { return std::to_string(t + dt); };
    events += std::string(s ? ",\n" : "") +
              R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(s) +
              R"(", "pid": 9, "tid": 9, "ts": )" + at(0) + R"(, "dur": 900.0},
{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 9, "tid": 9, "ts": )" + at(1) +
              R"(, "dur": 50.0, "args": {"External id": )" + std::to_string(ext) +
              R"(, "Sequence number": 3, "Input Dims": [[8, 16], [32, 16]]}},
{"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 9, "tid": 9, "ts": )" + at(1) +
              R"(, "dur": 5.0, "args": {"External id": )" + std::to_string(ext + 1) + R"(}},
{"ph": "s", "id": )" + std::to_string(ext + 1) + R"(, "pid": 9, "tid": 9, "ts": )" + at(1) +
              R"(, "cat": "fwdbwd", "name": "fwdbwd"},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": )" + at(10) +
              R"(, "dur": 4.0},
{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": )" + at(30) +
              R"(, "dur": 20.0, "args": {"device": 0, "stream": 7, "correlation": )" + std::to_string(ext) +
              R"(, "grid": [8, 8, 1], "block": [128, 1, 1]}},
{"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 9, "tid": 9, "ts": )" + at(400) +
              R"(, "dur": 30.0, "args": {"External id": )" + std::to_string(ext + 2) + R"(}},
{"ph": "f", "id": )" + std::to_string(ext + 1) + R"(, "pid": 9, "tid": 9, "ts": )" + at(400) +
              R"(, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
{"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#)" + std::to_string(s) +
              R"(", "pid": 0, "tid": 7, "ts": )" + at(20) + R"(, "dur": 950.0, "args": {"device": 0, "stream": 7}})";
  }
  return R"({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) +
         R"(, "world_size": 2}, "traceEvents": [
)" + events + R"(
], "displayTimeUnit": "ms", "baseTimeNanoseconds": 1790000000000000000})";
}

std::string write_trace(const std::string& stem, const std::string& text) {
  const auto path = fs::path(testing::temp_path(stem)) / "rank1.json";
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path.string();
}

TEST(TraceStreaming, ABatchedReadOfTheFileEqualsTheParseOfItsText) {
  const std::string text = kineto_trace(40, 1);
  const auto path = write_trace("stream_equal", text);
  const ChromeTrace parsed = parse_chrome_trace(text, path);
  ChromeTraceSink sink;
  sink.batch_records = 7;  // many batches
  std::vector<ActivityRecord> activities;
  std::vector<NvtxRange> ranges;
  std::size_t batches = 0;
  sink.activities = [&](std::vector<ActivityRecord>& r) { activities.insert(activities.end(), r.begin(), r.end()), ++batches; };
  sink.ranges = [&](std::vector<NvtxRange>& r) { ranges.insert(ranges.end(), r.begin(), r.end()), ++batches; };
  std::vector<ForwardLink> links;
  std::size_t link_batches = 0;
  sink.links = [&](std::vector<ForwardLink>& l) {
    EXPECT_EQ(ranges.size(), 40u * 5);  // after the last range
    links.insert(links.end(), l.begin(), l.end()), ++link_batches;
  };
  std::optional<int> rank_before_records;
  sink.indexed = [&](const ChromeTrace& header) { rank_before_records = header.rank; };
  const StreamedChromeTrace streamed = stream_chrome_trace(path, sink);
  EXPECT_EQ(rank_before_records, 1);
  EXPECT_GT(batches, 20u);
  EXPECT_EQ(streamed.activities, parsed.activities.size());
  EXPECT_EQ(streamed.ranges, parsed.ranges.size());
  ASSERT_EQ(ranges.size(), 40u * 5);  // two step windows and three operators a step
  ASSERT_EQ(links.size(), 40u);
  EXPECT_EQ(link_batches, 6u);  // 7 a batch
  EXPECT_EQ(streamed.trace.forward_backward_links, 40u);
  EXPECT_EQ(streamed.trace.forward_backward_links, parsed.forward_backward_links);
  EXPECT_EQ(streamed.trace.step_windows.size(), 40u);
  apply_forward_links(ranges, links);
  std::map<std::int64_t, const NvtxRange*> parsed_by_start_and_name;
  for (const auto& r : parsed.ranges)
    if (r.name == "TBackward0") parsed_by_start_and_name[r.start_ns] = &r;
  for (const auto& r : ranges) {
    if (r.name != "TBackward0") continue;
    const NvtxRange* p = parsed_by_start_and_name.at(r.start_ns);
    EXPECT_EQ(r.forward_op_id, p->forward_op_id);
    EXPECT_EQ(r.step, p->step);
  }
  for (std::size_t i = 0; i < activities.size(); ++i) EXPECT_EQ(activities[i].step, parsed.activities[i].step);
}

TEST(TraceStreaming, ProgressCoversBothPassesToTheFilesSize) {
  const std::string text = kineto_trace(2400, 1);  // ~3 MB: several 1 MiB reads a pass
  const auto path = write_trace("stream_progress", text);
  ChromeTraceSink sink;
  sink.activities = [](std::vector<ActivityRecord>&) {};
  sink.ranges = [](std::vector<NvtxRange>&) {};
  std::vector<std::pair<int, std::uint64_t>> reports;
  sink.progress = [&](std::uint64_t bytes, std::uint64_t size, int pass) {
    EXPECT_EQ(size, text.size());
    reports.emplace_back(pass, bytes);
  };
  stream_chrome_trace(path, sink);
  ASSERT_GE(reports.size(), 6u);
  EXPECT_EQ(reports.front(), std::make_pair(1, std::uint64_t{1} << 20));
  EXPECT_EQ(reports.back(), std::make_pair(2, static_cast<std::uint64_t>(text.size())));
}

TEST(TraceStreaming, AnImportWritesTheRecordsWithTheirLinksAndReportsTheBytes) {
  const std::string text = kineto_trace(300, 1);
  const auto path = write_trace("stream_import", text);
  const auto db = testing::temp_path("stream_import_db");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.traces = {{std::nullopt, path}};
  DeepSpeedImportOptions options;
  std::vector<ImportProgress> reports;
  options.progress = [&](const ImportProgress& p) { reports.push_back(p); };
  const auto result = import_deepspeed_run(store, sources, options);
  EXPECT_EQ(result.activities, 300u);
  EXPECT_EQ(result.ranges, 300u * 5);
  EXPECT_EQ(result.forward_backward_links, 300u);
  const auto ranges = load_nvtx(store, result.session_id, 1);
  ASSERT_EQ(ranges.size(), 300u * 5);
  std::size_t linked = 0;
  for (const auto& r : ranges) {
    if (r.name == "TBackward0") linked += r.forward_op_id == r.external_id.value_or(0) - 1 ? 1 : 0;
    if (r.name == "ProfilerStep#0" && r.device < 0) {
      EXPECT_EQ(r.step, 1);
    }
  }
  EXPECT_EQ(linked, 300u);  // each backward op's forward op is its step's aten::t
  EXPECT_EQ(load_activities(store, result.session_id, 1).back().step, 300);
  const ImportProgress* last_trace_report = nullptr;
  for (const auto& p : reports)
    if (p.stage == "traces" && p.files == 1) last_trace_report = &p;
  ASSERT_NE(last_trace_report, nullptr);
  EXPECT_EQ(last_trace_report->bytes_total, 2 * text.size());
  EXPECT_EQ(last_trace_report->bytes_done, last_trace_report->bytes_total);
  EXPECT_EQ(last_trace_report->file, path);
  testing::remove_store(db);
}

// The flow ends wait in a scratch table until the operators come by (chrome_trace_builder.cpp):
// each end binds to the innermost operator of its thread enclosing it, whatever the file order,
// and the links come out by flow id, so a later id wins on an operator two flows end in. The
// expected links are worked out by hand from the times below.
TEST(TraceStreaming, FlowEndsBindToTheInnermostEnclosingOperatorOfTheirThread) {
  auto op = [](const char* name, int tid, int ts, int dur, const char* external_id) {
    return std::string(R"({"ph": "X", "cat": "cpu_op", "name": ")") + name + R"(", "pid": 1, "tid": )" +
           std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) +
           R"(, "args": {)" + (*external_id ? std::string(R"("External id": )") + external_id : "") + "}},\n";
  };
  auto flow = [](char ph, int id, int tid, int ts) {
    return std::string(R"({"ph": ")") + ph + R"(", "cat": "fwdbwd", "name": "fwdbwd", "id": )" + std::to_string(id) +
           R"(, "pid": 1, "tid": )" + std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + "},\n";
  };
  const std::string events =
      flow('s', 5, 1, 100) +                                             // before its operators in the file
      op("aten::linear", 1, 100, 50, "10") + op("aten::t", 1, 100, 5, "11") +  // same start: the shorter is inner
      op("Backward0", 2, 400, 30, "20") + op("Inner", 2, 410, 5, "21") +
      flow('f', 5, 2, 412) +                                             // in Inner, inside Backward0: Inner
      flow('f', 5, 2, 420) +                                             // after Inner ended: Backward0
      flow('s', 6, 1, 500) + flow('f', 6, 2, 405) +                      // no operator at 500: no link
      flow('s', 7, 1, 130) + flow('f', 7, 2, 401) +                      // aten::linear (aten::t ended at 105)
      op("NoId", 3, 600, 10, "") + flow('s', 8, 3, 600) + flow('f', 8, 2, 425) +  // a forward op without an id
      op("Other", 1, 900, 10, "30") + flow('f', 5, 9, 905);              // another thread's op does not enclose it
  const std::string text = R"({"traceEvents": [
)" + events + R"({"ph": "i", "name": "end", "ts": 1}], "baseTimeNanoseconds": 1790000000000000000})";
  const auto path = write_trace("stream_flows", text);
  std::map<std::string, std::optional<std::int64_t>> forward_of;
  for (const auto& r : parse_chrome_trace(text, path).ranges) forward_of[r.name] = r.forward_op_id;
  EXPECT_EQ(forward_of.at("Inner"), 11);
  EXPECT_EQ(forward_of.at("Backward0"), 10);  // id 5 gave it 11, id 7 then 10
  EXPECT_EQ(forward_of.at("aten::t"), std::nullopt);
  EXPECT_EQ(forward_of.at("aten::linear"), std::nullopt);
  EXPECT_EQ(forward_of.at("Other"), std::nullopt);

  ChromeTraceSink sink;
  sink.activities = [](std::vector<ActivityRecord>&) {};
  sink.ranges = [](std::vector<NvtxRange>&) {};
  std::vector<ForwardLink> links;
  sink.links = [&](std::vector<ForwardLink>& l) { links.insert(links.end(), l.begin(), l.end()); };
  const StreamedChromeTrace streamed = stream_chrome_trace(path, sink);
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(streamed.trace.forward_backward_links, 3u);
  const std::int64_t base = 1790000000000000000;
  auto us = [base](int t) { return base + std::int64_t{t} * 1000; };
  EXPECT_EQ(std::make_tuple(links[0].stream, links[0].start_ns, links[0].end_ns, links[0].external_id, links[0].forward_op_id),
            std::make_tuple(std::int64_t{2}, us(410), us(415), std::optional<std::int64_t>(21), std::int64_t{11}));
  EXPECT_EQ(std::make_tuple(links[1].start_ns, links[1].external_id, links[1].forward_op_id),
            std::make_tuple(us(400), std::optional<std::int64_t>(20), std::int64_t{11}));
  EXPECT_EQ(std::make_tuple(links[2].start_ns, links[2].external_id, links[2].forward_op_id),
            std::make_tuple(us(400), std::optional<std::int64_t>(20), std::int64_t{10}));
}

}  // namespace
}  // namespace shardscope::sessions
