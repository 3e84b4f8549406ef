// `sessions show` lists the run doctor's findings (issue 28): the stored ones, then the ones the
// steps show, in the table and in --json.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using shardscope::testing::run_cli;

TEST(DoctorCli, ShowListsStoredAndComputedFindings) {
  const std::string db = testing::temp_path("doctor_cli") + ".db";
  {
    Store store = Store::open_or_create(db);
    StoreWriter writer(store);
    std::vector<Event> events{testing::sample_run_start("sick", 2, "{}")};
    for (auto& e : testing::sample_steps(2, 10)) {  // steps 0-9; rank 0 reports the loss
      if (auto* step = std::get_if<StepMetrics>(&e); step && step->loss && step->step >= 6)
        step->loss = std::numeric_limits<double>::infinity();  // NaN is stored as NULL
      events.push_back(e);
    }
    Finding hang;
    hang.kind = "hang";
    hang.severity = "error";
    hang.first_step = hang.last_step = 9;
    hang.ranks = {1};
    hang.summary = "hang in all_reduce #40; never entered by node-b:1";
    hang.evidence = "node-b:1: in no collective\nnode-a:0: waits in all_reduce #40\n";
    hang.suggested_fix = "read node-b:1's log";
    events.push_back(hang);
    writer.write("uid-sick-0000", events);
  }
  const auto text = run_cli({"sessions", "show", "sick", "--db", db});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("findings: 2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[error] hang, step 9: hang in all_reduce #40; never entered by node-b:1"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("      node-a:0: waits in all_reduce #40"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    fix: read node-b:1's log"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[error] inf_loss, steps 6-9"), std::string::npos) << text.out;
  const auto json = run_cli({"sessions", "show", "sick", "--db", db, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["findings"].size(), 2u);
  EXPECT_EQ(j["findings"][0]["kind"], "hang");
  EXPECT_EQ(j["findings"][0]["ranks"], nlohmann::json::array({1}));
  EXPECT_EQ(j["findings"][1]["kind"], "inf_loss");
  EXPECT_EQ(j["findings"][1]["first_step"], 6);
  testing::remove_store(db);
}

}  // namespace
}  // namespace shardscope::sessions
