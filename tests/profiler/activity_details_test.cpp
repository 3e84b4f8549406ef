// The optional activity details the CUPTI collector records (protocol 2, schema 3): they travel on
// the wire, land in the store and come back; a schema-2 file is upgraded with its rows intact.
#include <gtest/gtest.h>

#include "sessions/event_codec.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_schema.hpp"
#include "sessions/store_writer.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::sessions {
namespace {

ActivityBatch detailed_batch() {
  ActivityRecord kernel{ActivityKind::kKernel, "void gemm<128>(float*)", 100, 900, 1, 7, 0, 3};
  kernel.grid = Dim3{64, 2, 1};
  kernel.block = Dim3{128, 1, 1};
  kernel.registers_per_thread = 96;
  kernel.correlation_id = 4242;
  ActivityRecord copy{ActivityKind::kMemcpy, "HtoD", 1000, 3000, 1, 9, 4096, 3};
  copy.correlation_id = 4243;
  copy.throughput_gbps = 2.048;
  ActivityRecord plain{ActivityKind::kMemset, "memset", 4000, 4100, 1, 9, 64, 3};
  return ActivityBatch{2, {kernel, copy, plain}};
}

void expect_same(const ActivityRecord& a, const ActivityRecord& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.registers_per_thread, b.registers_per_thread);
  EXPECT_EQ(a.correlation_id, b.correlation_id);
  EXPECT_EQ(a.throughput_gbps, b.throughput_gbps);
}

TEST(ActivityDetails, RoundTripOnTheWire) {
  const auto batch = detailed_batch();
  std::string bytes;
  encode_event(batch, bytes);
  FrameDecoder decoder;
  decoder.feed(bytes.data(), bytes.size());
  Frame frame;
  ASSERT_TRUE(decoder.next(frame));
  const auto& back = std::get<ActivityBatch>(std::get<Event>(frame));
  ASSERT_EQ(back.records.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) expect_same(back.records[i], batch.records[i]);
  EXPECT_FALSE(back.records[2].grid.has_value());
}

TEST(ActivityDetails, StoredAndReadBack) {
  test::TempDir dir;
  Store store = Store::open_or_create(dir.file("runs.db"));
  StoreWriter(store).write("uid-details", {detailed_batch()});
  const auto id = find_session(store, "uid-details");
  const auto back = load_activity_details(store, id, 2);
  ASSERT_EQ(back.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) expect_same(back[i], detailed_batch().records[i]);
  EXPECT_EQ(load_activities(store, id, 2).size(), 3u);  // the plain reader is unaffected
}

TEST(ActivityDetails, SchemaTwoFileIsUpgraded) {
  test::TempDir dir;
  const auto path = dir.file("v2.db");
  {
    SqliteDb db(path, true, false);
    ASSERT_EQ(migrate_schema(db, 2).size(), 2u);
    db.exec("INSERT INTO sessions(uid, name, status) VALUES('old-uid', 'old run', 'completed')");
    db.exec("INSERT INTO names(text) VALUES('old_kernel')");
    db.exec("INSERT INTO activities(session_id, rank, kind, name_id, start_ns, end_ns, device, stream, bytes, step) "
            "VALUES(1, 0, 0, 1, 10, 20, 0, 7, 0, 1)");
  }
  Store store = Store::open(path);
  ASSERT_EQ(store.migrations_applied().size(), static_cast<std::size_t>(kSchemaVersion - 2));  // 2 -> 3, ... to the newest
  EXPECT_EQ(store.migrations_applied()[0], "2 -> 3: add kernel launch details and copy throughput to activities");
  EXPECT_EQ(store.schema_version(), kSchemaVersion);
  const auto old = load_activity_details(store, 1, 0);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].name, "old_kernel");
  EXPECT_EQ(old[0].end_ns, 20);
  EXPECT_FALSE(old[0].grid.has_value());
  EXPECT_FALSE(old[0].correlation_id.has_value());
  StoreWriter(store).write("old-uid", {detailed_batch()});
  EXPECT_EQ(load_activity_details(store, 1, 2).at(0).registers_per_thread, 96);
}

}  // namespace
}  // namespace shardscope::sessions
