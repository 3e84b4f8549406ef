// The flight recorder's dumps, decoded and diagnosed: real dumps of a 3-rank gloo run in which
// rank 2 skipped the last all-reduce (data/flight_record/, made by make_flight_record_dumps.py
// with torch 2.11), both the pickle and the JSON variant; damaged and hostile ones made from them.
#include "diagnosis/flight_record.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "diagnosis/flight_record_import.hpp"
#include "sessions/doctor_records.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::diagnosis {
namespace {

namespace fs = std::filesystem;
const std::string kDumps = SHARDSCOPE_TEST_DATA_DIR "/flight_record";

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

FlightRecordDump real_dump(int rank, const std::string& prefix = "nccl_trace_rank_") {
  const std::string path = kDumps + "/" + prefix + std::to_string(rank);
  return decode_flight_record(bytes_of(path), path, rank);
}

std::vector<FlightRecordDump> real_run(const std::string& prefix = "nccl_trace_rank_") {
  return {real_dump(0, prefix), real_dump(1, prefix), real_dump(2, prefix)};
}

std::string error_of(const std::string& bytes, const std::string& file = "dump_rank_0") {
  try {
    decode_flight_record(bytes, file, 0);
  } catch (const sessions::ImportError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FlightRecord, ARealGlooDumpDecodesToItsCollectives) {
  const auto d = real_dump(0);
  EXPECT_EQ(d.format, "pickle");
  EXPECT_EQ(d.version, "2.10");
  ASSERT_EQ(d.collectives.size(), 7u);  // 3 all-reduces, the pair's, a broadcast, 2 all-reduces
  const auto& pair = d.collectives[3];
  EXPECT_EQ(pair.group, "pair (pg 1)");
  EXPECT_EQ(pair.sequence, 1);
  EXPECT_EQ(pair.op, "all_reduce");
  EXPECT_EQ(pair.bytes, 20);  // 10 bfloat16
  EXPECT_EQ(pair.dtype, "BFloat16");
  EXPECT_TRUE(pair.left_at.has_value());
  const auto& last = d.collectives.back();
  EXPECT_EQ(last.group, "default_pg (pg 0)");
  EXPECT_EQ(last.sequence, 6);
  EXPECT_EQ(last.bytes, 4000);
  EXPECT_EQ(last.step, -1);
  EXPECT_FALSE(last.left_at.has_value()) << "rank 0 dumped while it waited in #6";
  EXPECT_EQ(last.tag.rfind("make_flight_record_dumps.py:", 0), 0u) << last.tag;
  EXPECT_GT(last.entered_at, 1.7e9);
  EXPECT_EQ(d.group_status.at("pg 0"), "last enqueued #6, last completed #5");
}

TEST(FlightRecord, TheJsonVariantDecodesAsThePickleDoes) {
  const auto pickle = real_dump(1), json = real_dump(1, "nccl_trace_json_rank_");
  EXPECT_EQ(json.format, "json");
  ASSERT_EQ(json.collectives.size(), pickle.collectives.size());
  for (std::size_t i = 0; i < json.collectives.size(); ++i) {
    const auto &a = pickle.collectives[i], &b = json.collectives[i];
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.sequence, b.sequence);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.left_at.has_value(), b.left_at.has_value());
    EXPECT_EQ(b.tag, "") << "the JSON variant carries no Python frames";
  }
}

TEST(FlightRecord, TheRankThatSkippedTheAllReduceIsNamed) {
  RunPicture run;
  run.now = real_dump(0).collectives.back().entered_at + 1.5;
  const auto f = diagnose_flight_records(real_run(), run);
  EXPECT_EQ(f.kind, "hang");
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.first_step, -1);
  EXPECT_NE(f.summary.find("hang in all_reduce #6 (make_flight_record_dumps.py:"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("group default_pg (pg 0): ?:0, ?:1 wait(s) since 1.5 s; never entered by ?:2"),
            std::string::npos) << f.summary;
  EXPECT_EQ(f.summary.find("step"), std::string::npos) << "the recorder knows no step: " << f.summary;
  EXPECT_NE(f.evidence.find("?:2: in no collective; last completed all_reduce #5"), std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("rank 2: " + kDumps + "/nccl_trace_rank_2 (pickle, format 2.10): 5 collectives"),
            std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("the oldest open all_reduce #6 of default_pg (pg 0) entered 20"), std::string::npos);
}

TEST(FlightRecord, HostsOfTheSessionNameTheRanksAndAMissingDumpIsSaid) {
  RunPicture run;
  run.hosts = {{0, "node-a"}, {1, "node-a"}, {2, "node-b"}, {3, "node-b"}};
  run.world_size = 4;
  run.now = real_dump(0).collectives.back().entered_at + 2;
  auto dumps = real_run();
  const auto f = diagnose_flight_records(dumps, run);
  EXPECT_NE(f.summary.find("never entered by node-b:2, node-b:3"), std::string::npos) << f.summary;
  EXPECT_NE(f.evidence.find("rank 3: no dump read"), std::string::npos) << f.evidence;
}

TEST(FlightRecord, DumpsWithNothingOpenAreNoHang) {
  auto dumps = real_run();
  for (auto& d : dumps) d.collectives.pop_back();  // as if dumped before the skipped all-reduce
  dumps[2].collectives.pop_back();
  const auto f = diagnose_flight_records(dumps, RunPicture{});
  EXPECT_EQ(f.kind, "flight_record");
  EXPECT_EQ(f.severity, "info");
}

TEST(FlightRecord, TheRankComesFromTheNamesTrailingDigits) {
  EXPECT_EQ(flight_record_rank("nccl_trace_rank_12"), 12);
  EXPECT_EQ(flight_record_rank("/tmp/fr7"), 7);
  EXPECT_FALSE(flight_record_rank("nccl_trace_rank_").has_value());
  EXPECT_FALSE(flight_record_rank("dump_12345678901").has_value());
}

TEST(FlightRecord, ATruncatedDumpIsRefusedNamingTheFile) {
  const std::string bytes = bytes_of(kDumps + "/nccl_trace_rank_0");
  for (std::size_t cut : {std::size_t{1}, bytes.size() / 3, bytes.size() - 1}) {
    const auto message = error_of(bytes.substr(0, cut), "/tmp/nccl_trace_rank_0");
    EXPECT_EQ(message.rfind("/tmp/nccl_trace_rank_0", 0), 0u) << message;
  }
  EXPECT_NE(error_of("hello").find("is not a pickle"), std::string::npos);
  EXPECT_NE(error_of("{\"version\": ").find("not JSON"), std::string::npos);
}

TEST(FlightRecord, AnotherFormatVersionIsRefusedWithWhatToUse) {
  std::string json = bytes_of(kDumps + "/nccl_trace_json_rank_0");
  json.replace(json.find("\"2.10\""), 6, "\"3.1\"");
  const auto message = error_of(json);
  EXPECT_NE(message.find("dump_rank_0: is a flight recorder dump of format '3.1'"), std::string::npos) << message;
  EXPECT_NE(message.find("fr_trace"), std::string::npos) << message;
}

TEST(FlightRecord, AMissingOrMistypedFieldNamesTheEntry) {
  std::string json = bytes_of(kDumps + "/nccl_trace_json_rank_0");
  std::string missing = json;
  missing.replace(missing.find("\"collective_seq_id\""), 19, "\"renamed_seq_id\"");
  EXPECT_NE(error_of(missing).find("entries[0] has no 'collective_seq_id'"), std::string::npos) << error_of(missing);
  std::string huge = json;
  huge.replace(huge.find("[[1000]]"), 8, "[[4611686018427387904, 4]]");
  EXPECT_NE(error_of(huge).find("entries[0].input_sizes"), std::string::npos) << error_of(huge);
}

TEST(FlightRecord, APickleOfOtherObjectsIsRefused) {
  // pickle.dumps({"version": "2.10", "entries": [object()]}) would need a global; torch's own
  // builtins.eval is refused by the allow-list before anything runs.
  const std::string evil = std::string("\x80\x02") + "cbuiltins\neval\nq\x00X\x04\x00\x00\x00testq\x01\x85R.";
  const auto message = error_of(evil);
  EXPECT_NE(message.find("builtins.eval"), std::string::npos) << message;
}

class FlightRecordImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flight_record_import_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FlightRecordImport, AFolderOfDumpsBecomesAHungSessionWithTheFinding) {
  for (int r = 0; r < 3; ++r)
    fs::copy_file(kDumps + "/nccl_trace_rank_" + std::to_string(r), dir_ / ("nccl_trace_rank_" + std::to_string(r)));
  double written = 0;
  const auto dumps = read_flight_records({{std::nullopt, dir_.string()}}, written);
  ASSERT_EQ(dumps.size(), 3u);
  EXPECT_GT(written, 1.7e9);
  auto store = sessions::Store::open_or_create((dir_ / "runs.db").string());
  const auto result = import_flight_records(store, dumps, written, {});
  EXPECT_TRUE(result.new_session);
  EXPECT_EQ(result.collectives, 19u);
  const auto detail = sessions::load_session(store, result.session_id);
  EXPECT_EQ(detail.info.status, "hung");
  EXPECT_EQ(detail.info.world_size, 3);
  EXPECT_EQ(detail.info.origin, "flight-recorder-import");
  const auto findings = sessions::load_findings(store, result.session_id);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(sessions::load_collective_marks(store, result.session_id).size(), 19u);
}

TEST_F(FlightRecordImport, AFolderOfTwoNamePatternsOrARepeatedRankIsRefused) {
  try {
    double written = 0;
    read_flight_records({{std::nullopt, kDumps}}, written);
    FAIL() << "two name patterns accepted";
  } catch (const sessions::ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("nccl_trace_json_rank_<rank>, nccl_trace_rank_<rank>"), std::string::npos) << e.what();
  }
  try {
    double written = 0;
    read_flight_records({{std::nullopt, kDumps + "/nccl_trace_rank_1"}, {1, kDumps + "/nccl_trace_json_rank_0"}}, written);
    FAIL() << "two dumps of rank 1 accepted";
  } catch (const sessions::ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("a second dump of rank 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::diagnosis
