#include "sessions/event_codec.hpp"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

std::vector<Frame> decode_all(const std::string& bytes, std::size_t piece) {
  FrameDecoder decoder;
  std::vector<Frame> frames;
  Frame frame;
  for (std::size_t i = 0; i < bytes.size(); i += piece) {
    decoder.feed(bytes.data() + i, std::min(piece, bytes.size() - i));
    while (decoder.next(frame)) frames.push_back(frame);
  }
  EXPECT_EQ(decoder.buffered_bytes(), 0u);
  return frames;
}

TEST(EventCodec, EveryEventTypeRoundTripsEvenFedByteByByte) {
  std::string bytes;
  Hello sent_hello;
  sent_hello.rank = 3;
  sent_hello.host = "node-a";
  sent_hello.pid = 4242;
  sent_hello.client_nonce[0] = 7;
  sent_hello.proof[31] = 9;
  encode_hello(sent_hello, bytes);
  std::vector<Event> events;
  RunStart run_start = testing::sample_run_start("run", 2, R"({"train_batch_size": 8})");
  run_start.environment_variables = {{"NCCL_DEBUG", "INFO"}, {"PYTHONPATH", "/work"}};
  events.push_back(run_start);
  StepMetrics step;
  step.rank = 1;
  step.step = 7;
  step.loss = 2.5;
  step.mem_peak_bytes = 123;
  step.skipped = true;
  events.push_back(step);
  events.push_back(TimerBreakdown{1, 7, {{"forward", 1.5}, {"backward", 3.25}}});
  events.push_back(CommRecord{1, 7, "all_gather", 4096, 12.5, 0.3, 0.45, 8});
  events.push_back(ActivityBatch{1, {{ActivityKind::kMemcpy, "HtoD", 10, 20, 0, 7, 4096, 7},
                                     {ActivityKind::kKernel, "sgemm", 30, 90, 0, 7, 0, 7}}});
  events.push_back(NvtxBatch{1, {{"forward", "shardscope", 5, 95, -1, 1234, 7}}});
  events.push_back(LogLine{1, 17.5, LogLevel::kWarning, "overflow, skipping step"});
  events.push_back(RunEnd{"failed", 100, 42.5, {{0, 0}, {1, -9}}});
  events.push_back(SeriesPoint{0, 3, "flops_profiler/params_per_gpu", 577});
  events.push_back(CommSummary{0, "all_reduce", 2304, 6, 1042.59, 181.69, 0.5, 0.25});
  events.push_back(SessionOrigin{"deepspeed-import", R"({"logs": ["run.log"]})"});
  HostReport host;
  host.host = "10.0.0.2";
  host.node_rank = 1;
  host.clock_offset_s = -0.25;
  host.shardscope_version = "0.1.0";
  host.ranks = {{2, 0, "10.0.0.2", 77, "cpu"}};
  host.exit_codes = {{2, 137}};
  events.push_back(host);
  for (const auto& e : events) encode_event(e, bytes);

  const auto frames = decode_all(bytes, 1);
  ASSERT_EQ(frames.size(), events.size() + 1);
  const auto& hello = std::get<Hello>(frames[0]);
  EXPECT_EQ(hello.rank, 3);
  EXPECT_EQ(hello.host, "node-a");
  EXPECT_EQ(hello.pid, 4242);
  EXPECT_EQ(hello.client_nonce, sent_hello.client_nonce);
  EXPECT_EQ(hello.proof, sent_hello.proof);
  const auto& start = std::get<RunStart>(std::get<Event>(frames[1]));
  EXPECT_EQ(start.environment_variables, run_start.environment_variables);
  EXPECT_EQ(start.name, "run");
  EXPECT_EQ(start.ranks.size(), 2u);
  EXPECT_EQ(start.environment.accelerator.gpus.at(0).name, "NVIDIA H200");
  EXPECT_EQ(start.tags, std::vector<std::string>{"baseline"});
  const auto& s = std::get<StepMetrics>(std::get<Event>(frames[2]));
  EXPECT_EQ(s.step, 7);
  EXPECT_EQ(s.loss, 2.5);
  EXPECT_FALSE(s.lr.has_value());  // "not measured" survives the trip
  EXPECT_EQ(s.mem_peak_bytes, 123);
  EXPECT_FALSE(s.mem_reserved_bytes.has_value());
  EXPECT_TRUE(s.skipped);
  EXPECT_EQ(std::get<TimerBreakdown>(std::get<Event>(frames[3])).timers[1].ms, 3.25);
  EXPECT_EQ(std::get<CommRecord>(std::get<Event>(frames[4])).group_size, 8);
  const auto& batch = std::get<ActivityBatch>(std::get<Event>(frames[5]));
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].kind, ActivityKind::kMemcpy);
  EXPECT_EQ(batch.records[1].name, "sgemm");
  EXPECT_EQ(batch.records[1].end_ns, 90);
  EXPECT_EQ(std::get<NvtxBatch>(std::get<Event>(frames[6])).ranges[0].stream, 1234);
  EXPECT_EQ(std::get<LogLine>(std::get<Event>(frames[7])).text, "overflow, skipping step");
  const auto& end = std::get<RunEnd>(std::get<Event>(frames[8]));
  EXPECT_EQ(end.exit_codes[1].exit_code, -9);
  EXPECT_EQ(end.wall_time_s, 42.5);
  const auto& point = std::get<SeriesPoint>(std::get<Event>(frames[9]));
  EXPECT_EQ(point.name, "flops_profiler/params_per_gpu");
  EXPECT_EQ(point.step, 3);
  EXPECT_EQ(point.value, 577);
  const auto& summary = std::get<CommSummary>(std::get<Event>(frames[10]));
  EXPECT_EQ(summary.message_bytes, 2304);
  EXPECT_EQ(summary.count, 6);
  EXPECT_EQ(summary.avg_latency_ms, 181.69);
  EXPECT_EQ(summary.busbw_gbps, 0.25);
  const auto& origin = std::get<SessionOrigin>(std::get<Event>(frames[11]));
  EXPECT_EQ(origin.kind, "deepspeed-import");
  EXPECT_EQ(origin.details_json, R"({"logs": ["run.log"]})");
  const auto& report = std::get<HostReport>(std::get<Event>(frames[12]));
  EXPECT_EQ(report.host, "10.0.0.2");
  EXPECT_EQ(report.node_rank, 1);
  EXPECT_EQ(report.clock_offset_s, -0.25);
  EXPECT_FALSE(report.clock_uncertainty_s.has_value());
  ASSERT_EQ(report.ranks.size(), 1u);
  EXPECT_EQ(report.ranks[0].pid, 77);
  EXPECT_EQ(report.exit_codes[0].exit_code, 137);
}

// CPU operator details (issue 34) ride in a block after the ranges, written only when a range has
// some: a batch without them is byte for byte the protocol-3 frame older peers send and read.
TEST(EventCodec, NvtxOperatorDetailsRoundTripAndPlainBatchesKeepTheOldBytes) {
  NvtxRange plain{"forward", "shardscope", 5, 95, -1, 1234, 7};
  std::string old_bytes;
  encode_event(NvtxBatch{1, {plain}}, old_bytes);
  EXPECT_EQ(old_bytes.size(), 4u + 1 + 4 + 4 + (4 + 7) + (4 + 10) + 8 + 8 + 4 + 8 + 8);
  NvtxRange op{"aten::addmm", kCpuOpDomain, 10, 20, -1, 9, 3};
  op.shapes = "[[32],[8,16],[16,32],[],[]]";
  op.external_id = 7;
  op.forward_op_id = -5;
  NvtxRange backward{"AddmmBackward0", kCpuOpDomain, 30, 40, -1, 9, 3};
  backward.sequence_number = 13;
  backward.forward_thread_id = 1;
  std::string bytes;
  encode_event(NvtxBatch{1, {plain, op, backward}}, bytes);
  const auto frames = decode_all(bytes, 1);
  ASSERT_EQ(frames.size(), 1u);
  const auto& ranges = std::get<NvtxBatch>(std::get<Event>(frames[0])).ranges;
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_FALSE(ranges[0].has_op_details());
  EXPECT_EQ(ranges[1].shapes, op.shapes);
  EXPECT_EQ(ranges[1].external_id, 7);
  EXPECT_EQ(ranges[1].forward_op_id, -5);
  EXPECT_EQ(ranges[1].sequence_number, std::nullopt);
  EXPECT_EQ(ranges[2].sequence_number, 13);
  EXPECT_EQ(ranges[2].forward_thread_id, 1);
  EXPECT_EQ(ranges[2].shapes, "");
  // The last range's mask (before its two int64 details) with an unknown bit.
  std::string bad = bytes.substr(4, bytes.size() - 4 - 16 - 1);
  bad.push_back(static_cast<char>(0x40));
  EXPECT_THROW(decode_frame_payload(bad.data(), bad.size()), ProtocolError);
}

TEST(EventCodec, HandshakeFramesRoundTripAndAnotherVersionIsNamedNotMisread) {
  std::string bytes;
  Challenge challenge;
  challenge.nonce[5] = 0xab;
  encode_challenge(challenge, bytes);
  Welcome welcome{"0123abcd", 1700000000.5, {}};
  welcome.proof[0] = 1;
  encode_welcome(welcome, bytes);
  const auto frames = decode_all(bytes, 3);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(std::get<Challenge>(frames[0]).nonce, challenge.nonce);
  EXPECT_EQ(std::get<Welcome>(frames[1]).session_uid, "0123abcd");
  EXPECT_EQ(std::get<Welcome>(frames[1]).server_time, 1700000000.5);
  EXPECT_EQ(std::get<Welcome>(frames[1]).proof, welcome.proof);
  // A protocol-2 Hello (session uid where the rank now is) decodes as "version 2", nothing more.
  std::string old;
  const std::uint32_t length = 4 + 2 + 4 + 3 + 1;
  old.append(reinterpret_cast<const char*>(&length), 4);
  old.push_back(static_cast<char>(FrameType::kHello));
  old.append(reinterpret_cast<const char*>(&kHelloMagic), 4);
  const std::uint16_t v2 = 2;
  old.append(reinterpret_cast<const char*>(&v2), 2);
  const std::uint32_t uid_length = 3;
  old.append(reinterpret_cast<const char*>(&uid_length), 4);
  old += "uid";
  const auto decoded = decode_all(old, old.size());
  ASSERT_EQ(decoded.size(), 1u);
  EXPECT_EQ(std::get<Hello>(decoded[0]).protocol_version, 2);
}

TEST(EventCodec, LengthPrefixIsLittleEndianAndCoversTypeAndPayload) {
  std::string bytes;
  encode_event(LogLine{0, 0, LogLevel::kInfo, "hi"}, bytes);
  std::uint32_t length;
  std::memcpy(&length, bytes.data(), 4);
  EXPECT_EQ(length, bytes.size() - 4);
  EXPECT_EQ(static_cast<std::uint8_t>(bytes[4]), static_cast<std::uint8_t>(FrameType::kLogLine));
  // type + rank(4) + time(8) + level(1) + len(4) + "hi"
  EXPECT_EQ(length, 1u + 4 + 8 + 1 + 4 + 2);
}

TEST(EventCodec, GarbageIsRejectedWithAClearError) {
  FrameDecoder decoder;
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  decoder.feed(http.data(), http.size());
  Frame frame;
  try {
    decoder.next(frame);
    FAIL() << "expected a ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("not a ShardScope event stream"), std::string::npos) << e.what();
  }
}

TEST(EventCodec, MalformedPayloadsAreRejected) {
  std::string bytes;
  encode_event(CommRecord{0, 1, "all_reduce", 8, 1, 1, 1, 2}, bytes);
  // Truncate the payload but fix the length so the frame is "complete" yet short.
  std::string payload = bytes.substr(4, bytes.size() - 4 - 6);
  EXPECT_THROW(decode_frame_payload(payload.data(), payload.size()), ProtocolError);
  std::string unknown = "\x63" "abc";
  EXPECT_THROW(decode_frame_payload(unknown.data(), unknown.size()), ProtocolError);
  std::string hello;
  encode_hello(Hello{}, hello);
  hello[5] ^= 0x55;  // corrupt the magic
  EXPECT_THROW(decode_frame_payload(hello.data() + 4, hello.size() - 4), ProtocolError);
  // A count field claiming more items than the frame can hold is refused before allocating.
  std::string batch;
  encode_event(ActivityBatch{0, {}}, batch);
  const std::uint32_t huge = 0x7fffffff;
  std::memcpy(&batch[4 + 1 + 4], &huge, 4);
  EXPECT_THROW(decode_frame_payload(batch.data() + 4, batch.size() - 4), ProtocolError);
}

// Found by tests/fuzz/collector_fuzzer: a RunStart whose config is not JSON decoded fine, then
// failed every transaction, and the collector retried that batch forever.
TEST(EventCodec, ARunStartWhoseConfigIsNotJsonIsAProtocolError) {
  RunStart start;
  start.config_json = R"({"zero_optimization": {"stage": 2},\x80)";
  std::string bytes;
  encode_event(start, bytes);
  try {
    decode_frame_payload(bytes.data() + 4, bytes.size() - 4);
    FAIL() << "a config that is not JSON was accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed RunStart frame: the config is not valid JSON"), std::string::npos)
        << e.what();
  }
  start.config_json.clear();  // no config at all is fine
  bytes.clear();
  encode_event(start, bytes);
  EXPECT_NO_THROW(decode_frame_payload(bytes.data() + 4, bytes.size() - 4));
}

// Found by tests/fuzz/collector_fuzzer: a NaN latency is stored as NULL in a NOT NULL column, so
// its batch failed every transaction and the collector retried it forever.
TEST(EventCodec, NaNWhereTheStoreNeedsANumberIsAProtocolError) {
  std::string comm, timer;
  encode_event(CommRecord{0, 1, "all_reduce", 8, std::nan(""), 1, 1, 2}, comm);
  encode_event(TimerBreakdown{0, 1, {{"forward", std::nan("")}}}, timer);
  for (const auto* bytes : {&comm, &timer}) {
    try {
      decode_frame_payload(bytes->data() + 4, bytes->size() - 4);
      FAIL() << "a NaN was accepted";
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find("is NaN"), std::string::npos) << e.what();
    }
  }
}

TEST(EventCodec, RecordCountsCountBatchMembers) {
  EXPECT_EQ(event_record_count(ActivityBatch{0, std::vector<ActivityRecord>(5)}), 5u);
  EXPECT_EQ(event_record_count(StepMetrics{}), 1u);
}

}  // namespace
}  // namespace shardscope::sessions
