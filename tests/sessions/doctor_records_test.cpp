// The run doctor's events (issue 28): CollectiveMark and Finding on the wire and in the store.
#include <gtest/gtest.h>

#include "sessions/doctor_records.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

CollectiveMark sample_mark(int rank, std::int64_t sequence, bool left) {
  CollectiveMark m;
  m.rank = rank;
  m.sequence = sequence;
  m.op = "all_reduce";
  m.bytes = 4096;
  m.dtype = "float32";
  m.step = 3;
  m.phase = "backward";
  m.tag = "grad bucket 0";
  m.entered_at = 1700000000.25;
  if (left) m.left_at = 1700000000.5;
  return m;
}

Finding sample_finding() {
  Finding f;
  f.kind = "hang";
  f.severity = "error";
  f.first_step = f.last_step = 3;
  f.ranks = {2};
  f.summary = "hang in all_reduce #7; never entered by node-b:2";
  f.evidence = "node-b:2: in no collective\n";
  f.suggested_fix = "read rank 2's log";
  f.found_at = 1700000010;
  return f;
}

TEST(DoctorRecords, MarksAndFindingsRoundTripOnTheWireAfterTheHandshakeTypes) {
  std::string bytes;
  auto open = sample_mark(1, 7, false);
  open.group_ranks = {0, 1, 2, 3};
  encode_event(open, bytes);
  encode_event(sample_finding(), bytes);
  EXPECT_EQ(static_cast<std::uint8_t>(bytes[4]), 16);  // after Challenge (14) and Welcome (15)
  FrameDecoder decoder;
  decoder.feed(bytes.data(), bytes.size());
  Frame frame;
  ASSERT_TRUE(decoder.next(frame));
  const auto& m = std::get<CollectiveMark>(std::get<Event>(frame));
  EXPECT_EQ(m.sequence, 7);
  EXPECT_EQ(m.group_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.tag, "grad bucket 0");
  EXPECT_FALSE(m.left_at.has_value());
  ASSERT_TRUE(decoder.next(frame));
  const auto& f = std::get<Finding>(std::get<Event>(frame));
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.summary, sample_finding().summary);
}

TEST(DoctorRecords, AFindingWithoutAKindIsAProtocolError) {
  std::string bytes;
  Finding f = sample_finding();
  f.kind.clear();
  encode_event(f, bytes);
  FrameDecoder decoder;
  decoder.feed(bytes.data(), bytes.size());
  Frame frame;
  EXPECT_THROW(decoder.next(frame), ProtocolError);
}

TEST(DoctorRecords, TheStoreKeepsTheLatestMarksWithTheirLeaveAndTheFindings) {
  const std::string path = testing::temp_path("doctor_records");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    std::vector<Event> events;
    for (std::int64_t s = 1; s <= kCollectivesKept + 5; ++s) {
      events.push_back(sample_mark(0, s, false));
      events.push_back(sample_mark(0, s, true));
    }
    events.push_back(sample_mark(1, kCollectivesKept + 6, false));  // still waiting
    events.push_back(sample_finding());
    writer.write("uid-doctor", events);
  }
  Store store = Store::open(path);
  const auto id = find_session(store, "uid-doctor");
  const auto marks = load_collective_marks(store, id);
  ASSERT_EQ(marks.size(), static_cast<std::size_t>(kCollectivesKept) + 1);
  EXPECT_EQ(marks.front().sequence, 6);  // the first five were forgotten
  EXPECT_TRUE(marks.front().left_at.has_value());
  EXPECT_EQ(marks.back().rank, 1);
  EXPECT_FALSE(marks.back().left_at.has_value());
  const auto findings = load_findings(store, id);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "hang");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(findings[0].first_step, 3);
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
