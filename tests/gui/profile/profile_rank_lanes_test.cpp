// The profile timeline at many ranks (issue 35 item 4): above ProfileTimeline::kFewRanks ranks,
// lanes only for the ranks the rank filter names (sessions::parse_rank_selection: ranges, hosts),
// its refusal shown under it, and two summary lanes whose min / median / max busy fractions equal
// a per-nanosecond count of each other rank's kernels and NCCL kernels; a click on the summary at
// a straggler adds the straggler's lanes.
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>

#include <algorithm>
#include <set>

#include "app/gui/profile/profile_data.hpp"
#include "app/gui/profile/profile_rank_summary.hpp"
#include "app/gui/profile/profile_timeline.hpp"
#include "app/gui/profile/profile_view.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;
namespace profiler = shardscope::profiler;

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;  // a Unix time in ns, as CUPTI's clock maps
constexpr std::int64_t kUs = 1000;
constexpr int kRanks = 12;
constexpr int kStraggler = 9;
const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";

ss::ActivityRecord kernel(const std::string& name, std::int64_t from_us, std::int64_t to_us, std::int64_t stream) {
  ss::ActivityRecord a;
  a.name = name;
  a.start_ns = kT0 + from_us * kUs;
  a.end_ns = kT0 + to_us * kUs;
  a.stream = stream;
  a.step = 3;
  return a;
}

// Twelve ranks on node0 (0-5) and node1 (6-11). Each computes for 500 us (two kernels on two
// streams, overlapping) and then waits in an all-reduce until 1,200 us; rank 9 computes until
// 1,100 us, so the others wait on it.
std::shared_ptr<ProfileData> twelve_ranks() {
  auto records = std::make_shared<profiler::ProfileRecords>();
  auto data = std::make_shared<ProfileData>();
  for (int r = 0; r < kRanks; ++r) {
    const std::int64_t compute_end = r == kStraggler ? 1100 : 500;
    records->ranks.push_back(r);
    records->activities[r] = {kernel("void gemm_kernel<float>(float*)", 0, compute_end, 7),
                              kernel("gelu_kernel", 400, compute_end, 8), kernel(kAllReduce, compute_end, 1200, 9)};
    data->rank_infos.push_back({r, r % 6, r < 6 ? "node0" : "node1", 0, "cuda:0"});
  }
  build_timeline(*records, *data);
  data->analyses = profiler::analyze_records(*records);
  data->records = records;
  return data;
}

std::set<int> lane_ranks(const ProfileTimeline& timeline) {
  std::set<int> out;
  for (int lane = timeline.summaryLanes(); lane < timeline.laneCount(); ++lane) out.insert(timeline.laneRow(lane)->rank);
  return out;
}

// The reference: busy per nanosecond, by counting, for one rank's kernels of one kind.
std::vector<double> busy_by_counting(const std::vector<ss::ActivityRecord>& list, bool nccl, const BusySummary& s) {
  const std::int64_t span = std::int64_t(s.kernels.min.size()) * s.bucket_ns;
  std::vector<char> busy(static_cast<std::size_t>(span), 0);
  for (const auto& a : list) {
    if (profiler::is_communication_kernel(a.name) != nccl) continue;
    for (std::int64_t t = std::max(a.start_ns, s.start_ns); t < std::min(a.end_ns, s.start_ns + span); ++t)
      busy[std::size_t(t - s.start_ns)] = 1;
  }
  std::vector<double> out;
  for (std::size_t b = 0; b < s.kernels.min.size(); ++b) {
    const auto first = busy.begin() + std::ptrdiff_t(b) * s.bucket_ns;
    out.push_back(double(std::count(first, first + s.bucket_ns, 1)) / double(s.bucket_ns));
  }
  return out;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

class ProfileRankLanesTest : public QObject {
  Q_OBJECT

 private slots:
  void busyIntervalsMergeOverlaps() {
    const auto busy = BusyIntervals::merge({{30, 40}, {5, 20}, {0, 10}, {35, 38}});
    QCOMPARE(busy.starts, (std::vector<std::int64_t>{0, 30}));
    QCOMPARE(busy.busy_ns(0, 100), std::int64_t(30));
    QCOMPARE(busy.busy_ns(8, 35), std::int64_t(12 + 5));
    QCOMPARE(busy.busy_ns(20, 30), std::int64_t(0));
  }

  void manyRanksShowRankZeroAndSummarizeTheRest() {
    ProfileView view;
    view.show(twelve_ranks());
    ProfileTimeline* timeline = view.timeline();
    QCOMPARE(view.rankFilter()->text(), QString("0"));
    QCOMPARE(lane_ranks(*timeline), (std::set<int>{0}));
    QCOMPARE(timeline->summaryLanes(), 2);
    QCOMPARE(timeline->summaryRanks(), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  }

  void rankFilterTakesRangesAndHosts() {
    ProfileView view;
    view.show(twelve_ranks());
    QVERIFY(view.setRankFilter("node1, 2-3"));
    QCOMPARE(lane_ranks(*view.timeline()), (std::set<int>{2, 3, 6, 7, 8, 9, 10, 11}));
    QCOMPARE(view.timeline()->summaryRanks(), (std::vector<int>{0, 1, 4, 5}));
    QVERIFY(view.rankFilterError()->isHidden());
    QVERIFY(view.setRankFilter(""));  // every rank: no summary lanes
    QCOMPARE(lane_ranks(*view.timeline()).size(), std::size_t(kRanks));
    QCOMPARE(view.timeline()->summaryLanes(), 0);
  }

  void badRankFilterIsNamedAndKeepsTheLanes() {
    ProfileView view;
    view.show(twelve_ranks());
    QVERIFY(view.setRankFilter("4"));
    QVERIFY(!view.setRankFilter("node7"));
    const QString error = view.rankFilterError()->text();
    QVERIFY2(!view.rankFilterError()->isHidden(), qPrintable(error));
    QVERIFY2(error.contains("'node7'") && error.contains("node0, node1"), qPrintable(error));
    QCOMPARE(lane_ranks(*view.timeline()), (std::set<int>{4}));
    QVERIFY(!view.setRankFilter("5-2"));
    QVERIFY2(view.rankFilterError()->text().contains("write 2-5"), qPrintable(view.rankFilterError()->text()));
    QVERIFY(view.setRankFilter("5"));
    QVERIFY(view.rankFilterError()->isHidden());
  }

  void summaryLanesEqualCountedBusyTime() {
    const auto data = twelve_ranks();
    ProfileTimeline timeline;
    timeline.resize(ProfileTimeline::kLabelWidth + 650, 400);
    timeline.setData(data);
    timeline.setViewRange(double(kT0), double(kT0 + 1300 * kUs));
    timeline.grab();  // paints: the summary is reduced for the pixels shown
    const BusySummary& s = timeline.lastSummary();
    QCOMPARE(s.kernels.min.size(), std::size_t(650 / ProfileTimeline::kSummaryBucketPx));  // by pixels, not records
    QCOMPARE(s.ranks, kRanks - 1);
    for (const bool nccl : {false, true}) {
      std::vector<std::vector<double>> per_rank;
      for (int r = 1; r < kRanks; ++r) per_rank.push_back(busy_by_counting(data->records->activities.at(r), nccl, s));
      const BusyBand& band = nccl ? s.collectives : s.kernels;
      for (std::size_t b = 0; b < band.min.size(); ++b) {
        std::vector<double> column;
        for (const auto& rank : per_rank) column.push_back(rank[b]);
        QCOMPARE(band.min[b], *std::min_element(column.begin(), column.end()));
        QCOMPARE(band.max[b], *std::max_element(column.begin(), column.end()));
        QCOMPARE(band.median[b], median_of(column));
      }
    }
    // While the others wait in NCCL, rank 9 is the one still computing: the outlier of both lanes.
    const auto bucket = std::size_t((800 * kUs - (s.start_ns - kT0)) / s.bucket_ns);
    QCOMPARE(s.kernels.max_rank[bucket], kStraggler);
    QCOMPARE(s.kernels.median[bucket], 0.0);
    QCOMPARE(s.collectives.min_rank[bucket], kStraggler);
    QCOMPARE(s.collectives.median[bucket], 1.0);
    QCOMPARE(s.kernels.outlier(bucket), kStraggler);
    QCOMPARE(s.collectives.outlier(bucket), kStraggler);
    const int x = int(timeline.xOf(double(kT0 + 800 * kUs)));
    QVERIFY(timeline.describeSummary(1, x).contains(QString("min 0 % (rank %1)").arg(kStraggler)));
  }

  void clickOnTheSummaryAddsTheStragglersLanes() {
    ProfileView view;
    view.resize(1100, 700);
    view.show(twelve_ranks());
    view.QWidget::show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    ProfileTimeline* timeline = view.timeline();
    timeline->setViewRange(double(kT0), double(kT0 + 1300 * kUs));
    timeline->grab();
    QTest::mouseClick(timeline, Qt::LeftButton, {}, QPoint(int(timeline->xOf(double(kT0 + 800 * kUs))), timeline->rowTop(1) + 10));
    QCOMPARE(view.rankFilter()->text(), QString("0,%1").arg(kStraggler));
    QCOMPARE(lane_ranks(*timeline), (std::set<int>{0, kStraggler}));
    QCOMPARE(timeline->summaryRanks().size(), std::size_t(kRanks - 2));
  }
};

QTEST_MAIN(ProfileRankLanesTest)
#include "profile_rank_lanes_test.moc"
