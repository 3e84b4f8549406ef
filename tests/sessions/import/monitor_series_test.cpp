// csv_monitor files and TensorBoard event records, as DeepSpeed's monitors write them.
#include <gtest/gtest.h>

#include <cstring>

#include "sessions/import/import_error.hpp"
#include "sessions/import/monitor_series.hpp"
#include "sessions/import/tensorboard_events.hpp"

namespace shardscope::sessions {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ImportError& e) {
    return e.what();
  }
  return "";
}

TEST(CsvMonitor, ReadsPythonCsvRowsWithCrlfAndAppendedHeaders) {
  const auto s = parse_csv_monitor_text("step,lr\r\n8,0.0\r\n16,0.0006309297535714573\r\nstep,lr\r\n24,1e-05\r\n",
                                        "lr.csv", "Train/Samples/lr");
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_EQ(s.points[1].x, 16);
  EXPECT_DOUBLE_EQ(s.points[1].value, 0.0006309297535714573);
  EXPECT_DOUBLE_EQ(s.points[2].value, 1e-05);
}

TEST(CsvMonitor, ALiveFileKeepsItsUnfinishedLastLine) {
  std::size_t consumed = 0;
  const std::string text = "step,lr\n8,0.5\n16,0.2";
  const auto live = parse_csv_monitor_text(text, "lr.csv", "lr", /*complete=*/false, &consumed);
  EXPECT_EQ(live.points.size(), 1u);
  EXPECT_EQ(consumed, std::string("step,lr\n8,0.5\n").size());
  EXPECT_EQ(parse_csv_monitor_text(text, "lr.csv", "lr").points.size(), 2u);
}

TEST(CsvMonitor, BadRowsNameTheFileAndLine) {
  EXPECT_EQ(error_of([] { parse_csv_monitor_text("step,lr\n8,0.5\n16,abc\n", "run/lr.csv", "lr"); }),
            "run/lr.csv:3: expected a whole step and a number, found '16,abc'");
  EXPECT_NE(error_of([] { parse_csv_monitor_text("time,value\n", "x.csv", "x"); }).find("x.csv:1: expected the header"),
            std::string::npos);
}

TEST(CsvMonitor, SeriesNamesComeBackFromFileNames) {
  EXPECT_EQ(csv_monitor_series_name("Train_Samples_elapsed_time_ms_forward", "elapsed_time_ms_forward"),
            "Train/Samples/elapsed_time_ms_forward");
  EXPECT_EQ(csv_monitor_series_name("Train_Samples_lr", "lr"), "Train/Samples/lr");
  EXPECT_EQ(csv_monitor_series_name("custom", "other"), "custom");
}

TEST(MonitorSeries, BecomeStepsTimersAndSeriesByTrainBatchSize) {
  std::vector<MonitorSeries> series = {
      {"Train/Samples/lr", {{8, 0.1, 0}, {16, 0.2, 0}}},
      {"Train/Samples/elapsed_time_ms_forward", {{8, 1.0, 0}}},
      {"Train/Samples/elapsed_time_ms_backward", {{8, 2.0, 0}}},
      {"Train/Samples/elapsed_time_ms_step", {{8, 4.0, 0}}},
      {"Train/Samples/eval_loss", {{16, 3.5, 0}}},
  };
  const auto events = monitor_series_to_events(series, {});  // tbs inferred: gcd(8, 16) = 8
  ASSERT_EQ(events.size(), 5u);
  const auto& timers = std::get<TimerBreakdown>(events[0]);
  EXPECT_EQ(timers.step, 1);
  ASSERT_EQ(timers.timers.size(), 3u);
  EXPECT_EQ(timers.timers[0].name, "backward");
  const auto& step1 = std::get<StepMetrics>(events[1]);
  EXPECT_DOUBLE_EQ(*step1.step_time_ms, 7.0);
  EXPECT_FALSE(step1.lr);  // the rate written at 8 samples is the one step 2 ran with
  const auto& step2 = std::get<StepMetrics>(events[2]);
  EXPECT_EQ(step2.step, 2);
  EXPECT_DOUBLE_EQ(*step2.lr, 0.1);
  EXPECT_EQ(std::get<StepMetrics>(events[3]).step, 3);
  const auto& eval = std::get<SeriesPoint>(events[4]);
  EXPECT_EQ(eval.name, "Train/Samples/eval_loss");
  EXPECT_EQ(eval.step, 2);
  EXPECT_EQ(monitor_series_to_events(series, {4}).size(), 5u);
  EXPECT_EQ(std::get<StepMetrics>(monitor_series_to_events(series, {4})[1]).step, 2);  // 8 samples / 4
}

// A record framed by hand: u64 length, masked CRC of the length, data, masked CRC of the data.
std::string tfrecord(const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t length = data.size();
  std::memcpy(out.data(), &length, 8);
  const std::uint32_t length_crc = mask_crc(crc32c(out));
  out.append(reinterpret_cast<const char*>(&length_crc), 4);
  out += data;
  const std::uint32_t data_crc = mask_crc(crc32c(data));
  out.append(reinterpret_cast<const char*>(&data_crc), 4);
  return out;
}

TEST(TensorBoard, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // RFC 3720's check value
  EXPECT_EQ(crc32c(""), 0u);
}

// Event{wall_time: 1.5, step: 16, summary {value {tag: "Train/Samples/lr" simple_value: 0.25}}},
// encoded from the protobuf wire format by hand.
const std::string kEvent = std::string("\x09\x00\x00\x00\x00\x00\x00\xf8\x3f", 9) + "\x10\x10" +
                           std::string("\x2a\x19\x0a\x17\x0a\x10", 6) + "Train/Samples/lr" +
                           std::string("\x15\x00\x00\x80\x3e", 5);

TEST(TensorBoard, DecodesTheScalarFieldsOfAnEvent) {
  const std::string bytes = tfrecord(kEvent) + tfrecord(kEvent);  // the records are views into it
  const auto records = split_tfrecords(bytes, "events.out.tfevents.1.host.2.0");
  ASSERT_EQ(records.size(), 2u);
  const auto event = decode_tf_event(records[0], "f", 12);
  EXPECT_DOUBLE_EQ(event.wall_time, 1.5);
  EXPECT_EQ(event.step, 16);
  ASSERT_EQ(event.scalars.size(), 1u);
  EXPECT_EQ(event.scalars[0].tag, "Train/Samples/lr");
  EXPECT_EQ(event.scalars[0].value, 0.25);
}

TEST(TensorBoard, ACorruptOrTruncatedRecordNamesTheByte) {
  std::string bytes = tfrecord(kEvent) + tfrecord(kEvent);
  std::string bad = bytes;
  bad[bytes.size() / 2 + 20] ^= 0x01;  // inside the second record's data
  EXPECT_NE(error_of([&] { split_tfrecords(bad, "ev"); }).find("ev: byte " + std::to_string(bytes.size() / 2) +
                                                               ": TFRecord data CRC mismatch"),
            std::string::npos);
  const std::string cut = bytes.substr(0, bytes.size() - 3);
  EXPECT_NE(error_of([&] { split_tfrecords(cut, "ev"); }).find("runs past the end"), std::string::npos);
  std::size_t consumed = 0;
  EXPECT_EQ(split_tfrecords(cut, "ev", true, &consumed).size(), 1u);  // a writer mid-record
  EXPECT_EQ(consumed, bytes.size() / 2);
  EXPECT_NE(error_of([] { decode_tf_event(std::string("\x2a\x7f\x00", 3), "ev", 0); }).find("runs past the end"),
            std::string::npos);
}

TEST(TensorBoard, TheHostComesFromTheEventFileName) {
  EXPECT_EQ(tensorboard_file_host("events.out.tfevents.1764579231.gpu-node-7.12345.0"), "gpu-node-7");
  EXPECT_EQ(tensorboard_file_host("events.out.tfevents.1764579231.node.example.com.12345.0"), "node.example.com");
  EXPECT_EQ(tensorboard_file_host("other.file"), "");
}

}  // namespace
}  // namespace shardscope::sessions
