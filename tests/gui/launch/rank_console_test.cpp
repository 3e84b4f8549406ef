// The Launch & Watch log console's rank filter: the Sessions page's syntax
// (sessions::parse_rank_selection: ranks, ranges, hosts) plus `launcher`, applied to the lines;
// a bad filter is named under the field, keeps the lines it showed, and goes away when fixed.
#include <QLabel>
#include <QLineEdit>
#include <QTest>

#include "app/gui/launch/rank_console.hpp"

using namespace shardscope::gui;

namespace {

QStringList shown(const RankConsole& console) {
  QStringList out;
  for (int r = 0; r < console.filter()->rowCount(); ++r) out << console.filter()->index(r, 0).data().toString();
  return out;
}

// Eight ranks on two hosts (0-3 on node0, 4-7 on node1), one line each and one of the launcher's.
void fill(RankConsole& console) {
  std::map<int, std::string> hosts;
  for (int r = 0; r < 8; ++r) hosts[r] = r < 4 ? "node0" : "node1";
  console.setRanks(8, hosts);
  console.append({-1, LineLevel::kInfo, "launching 8 ranks"});
  for (int r = 0; r < 8; ++r) {
    ConsoleLine line{r, LineLevel::kInfo, "step 1 on rank " + std::to_string(r)};
    line.host = hosts[r];
    console.append(line);
  }
}

}  // namespace

class RankConsoleTest : public QObject {
  Q_OBJECT

 private slots:
  void rangesHostsAndTheLauncher() {
    RankConsole console;
    fill(console);
    QCOMPARE(console.filter()->rowCount(), 9);
    QVERIFY(console.setRankFilter("0-1,6"));
    QCOMPARE(shown(console), (QStringList{"[node0:0] step 1 on rank 0", "[node0:1] step 1 on rank 1",
                                          "[node1:6] step 1 on rank 6"}));
    QVERIFY(console.setRankFilter("node1"));
    QCOMPARE(console.filter()->rowCount(), 4);
    QVERIFY(shown(console).filter("node1:").size() == 4);
    QVERIFY(console.setRankFilter("launcher, 3"));
    QCOMPARE(shown(console), (QStringList{"[launch] launching 8 ranks", "[node0:3] step 1 on rank 3"}));
    QVERIFY(console.setRankFilter("launch"));
    QCOMPARE(console.filter()->rowCount(), 1);
    QVERIFY(console.setRankFilter("all"));
    QCOMPARE(console.filter()->rowCount(), 9);
  }

  void typingAppliesWhatParses() {
    RankConsole console;
    fill(console);
    QTest::keyClicks(console.rankField(), "2-");  // on its way to 2-4: no error while typing
    QVERIFY(console.rankError()->isHidden());
    QCOMPARE(console.filter()->rowCount(), 1);  // "2" applied as it was typed; "2-" does not parse
    QTest::keyClicks(console.rankField(), "4");
    QCOMPARE(console.filter()->rowCount(), 3);
    QTest::keyClick(console.rankField(), Qt::Key_Return);
    QVERIFY(console.rankError()->isHidden());
  }

  void badFilterIsNamedInline() {
    RankConsole console;
    console.resize(800, 300);
    fill(console);
    QVERIFY(console.setRankFilter("5"));
    QVERIFY(!console.setRankFilter("node9"));
    const QString error = console.rankError()->text();
    QVERIFY2(!console.rankError()->isHidden(), qPrintable(error));
    QVERIFY2(error.contains("'node9'") && error.contains("node0, node1") && error.contains("launcher"), qPrintable(error));
    QCOMPARE(shown(console), QStringList{"[node1:5] step 1 on rank 5"});  // the last good filter stays
    QVERIFY(!console.setRankFilter("12"));
    QVERIFY2(console.rankError()->text().contains("0-7"), qPrintable(console.rankError()->text()));
    console.resetFilters();  // a new run
    QVERIFY(console.rankError()->isHidden());
    QCOMPARE(console.filter()->rowCount(), 9);
  }
};

QTEST_MAIN(RankConsoleTest)
#include "rank_console_test.moc"
