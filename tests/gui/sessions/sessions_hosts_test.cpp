// Hosts on the Sessions & Compare page (issue 15 item 7), on session files written by the sessions
// library with HostReport events as a multi-host launcher sends them, and a DeepSpeed run imported
// without a host: the list's Hosts column (ranks per host, one host's name, "unknown"), and the environment diff's host rows (names, ranks,
// builds and clock offsets, all the library's environment rows), marked as differing exactly where
// the sessions differ, in one file and across files.
#include <algorithm>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/sessions/compare_data.hpp"
#include "app/gui/sessions/compare_table_models.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "sessions/import/deepspeed_import.hpp"
#include "sessions/session_compare.hpp"
#include "sessions/store.hpp"
#include "tests/gui/common/session_test_data.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

namespace {

const ss::DiffRow* find_row(const std::vector<ss::DiffRow>& rows, const std::string& path) {
  for (const auto& row : rows)
    if (row.path == path) return &row;
  return nullptr;
}

std::string value(const ss::DiffRow* row, std::size_t session) {
  return row && row->values[session] ? *row->values[session] : "(absent)";
}

}  // namespace

class SessionsHostsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_, other_file_;

  QString hostsShown(SessionsPage& page, const QString& name) {
    auto* model = page.catalogModel();
    for (int r = 0; r < model->rowCount(); ++r)
      if (model->index(r, SessionCatalogModel::kName).data().toString() == name)
        return model->index(r, SessionCatalogModel::kHosts).data().toString();
    return "(no row " + name + ")";
  }

  static SessionRef refByName(SessionsPage& page, const QString& name) {
    auto* model = page.catalogModel();
    for (int r = 0; r < model->rowCount(); ++r)
      if (model->index(r, SessionCatalogModel::kName).data().toString() == name) return model->ref(r);
    return {};
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeSessionsHostsTest");
    QSettings().clear();
    QVERIFY(dir_.isValid());
    file_ = dir_.filePath("hosts.db");
    other_file_ = dir_.filePath("other.db");
    testing::RunSpec first{"two-hosts", 4, 5, 100, 8};
    first.hosts = {"node1", "node2"};
    first.clock_offsets_s = {0, 0.0123};
    testing::RunSpec second{"two-hosts-later", 4, 5, 100, 8};
    second.hosts = {"node1", "node3"};
    second.clock_offsets_s = {0, -0.0456};
    second.host_version = "0.2.0";
    second.started_at += 100;
    testing::RunSpec single{"one-host", 2, 5, 100, 8};
    single.started_at += 200;
    testing::RunSpec nowhere{"no-host", 1, 5, 100, 8};
    nowhere.host = "";  // as an import whose files name no host
    nowhere.started_at += 300;
    testing::write_sessions(file_, {first, second, single, nowhere});
    testing::write_sessions(other_file_, {second});
    // A DeepSpeed run imported from its csv_monitor folder alone: nothing names its host.
    QDir().mkpath(dir_.filePath("csv/job"));
    QFile csv(dir_.filePath("csv/job/Train_Samples_lr.csv"));
    QVERIFY(csv.open(QIODevice::WriteOnly));
    csv.write("step,lr\r\n8,0.0\r\n16,0.001\r\n");
    csv.close();
    ss::StoreOpenOptions open;
    ss::Store store = ss::Store::open(file_.toStdString(), open);
    ss::DeepSpeedImportSources sources;
    sources.csv_monitor_dir = dir_.filePath("csv/job").toStdString();
    ss::DeepSpeedImportOptions options;
    options.name = "imported-csv";
    options.samples_per_step = 8;
    ss::import_deepspeed_run(store, sources, options);
  }

  void listShowsRanksPerHost() {
    SessionsPage page;
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file_});
    QVERIFY(loaded.wait(10000));
    QCOMPARE(hostsShown(page, "two-hosts"), QString("node1 (2 ranks), node2 (2 ranks)"));
    QCOMPARE(hostsShown(page, "two-hosts-later"), QString("node1 (2 ranks), node3 (2 ranks)"));
    QCOMPARE(hostsShown(page, "one-host"), QString("node-a"));
    QCOMPARE(hostsShown(page, "no-host"), QString("unknown"));
    QCOMPARE(hostsShown(page, "imported-csv"), QString("unknown"));
    // The filter matches what the column shows.
    page.filterProxy()->setText("node3");
    QCOMPARE(page.filterProxy()->rowCount(), 1);
    page.filterProxy()->setText("unknown");
    QCOMPARE(page.filterProxy()->rowCount(), 2);
  }

  void environmentDiffComparesHosts() {
    SessionsPage page;
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file_});
    QVERIFY(loaded.wait(10000));
    QSignalSpy ready(&page, &SessionsPage::comparisonReady);
    page.compare({refByName(page, "two-hosts"), refByName(page, "two-hosts-later")});
    QVERIFY(ready.wait(10000));
    const Comparison& c = page.comparison();
    QVERIFY2(c.error.empty(), c.error.c_str());
    const auto& rows = c.environment_diff;
    QCOMPARE(value(find_row(rows, "run.hosts[0].name"), 1), std::string("node1"));
    QVERIFY(!find_row(rows, "run.hosts[0].name")->differs);
    QCOMPARE(value(find_row(rows, "run.hosts[1].name"), 0), std::string("node2"));
    QCOMPARE(value(find_row(rows, "run.hosts[1].name"), 1), std::string("node3"));
    QVERIFY(find_row(rows, "run.hosts[1].name")->differs);
    QCOMPARE(value(find_row(rows, "run.hosts[1].ranks"), 1), std::string("2,3"));
    QVERIFY(!find_row(rows, "run.hosts[1].ranks")->differs);
    QCOMPARE(value(find_row(rows, "run.hosts[1].shardscope"), 1), std::string("0.2.0 (abc1234)"));
    QVERIFY(find_row(rows, "run.hosts[1].shardscope")->differs);
    // Clock offsets to 0.1 ms with the probe's uncertainty.
    QCOMPARE(value(find_row(rows, "run.hosts[0].clock_offset"), 0), std::string("+0.0 ms (\u00b1 0.2 ms)"));
    QVERIFY(!find_row(rows, "run.hosts[0].clock_offset")->differs);
    QCOMPARE(value(find_row(rows, "run.hosts[1].clock_offset"), 0), std::string("+12.3 ms (\u00b1 0.2 ms)"));
    QCOMPARE(value(find_row(rows, "run.hosts[1].clock_offset"), 1), std::string("-45.6 ms (\u00b1 0.2 ms)"));
    QVERIFY(find_row(rows, "run.hosts[1].clock_offset")->differs);
    // Every row, the clock offsets included, is the library's own (what `sessions compare --all`
    // prints), in path order.
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    ss::CompareOptions options;
    options.diff_only = false;
    const auto library = ss::compare_sessions(store, {c.sessions[0].id, c.sessions[1].id}, options);
    QCOMPARE(rows.size(), library.environment_diff.size());
    for (const auto& row : rows) {
      const ss::DiffRow* expected = find_row(library.environment_diff, row.path);
      QVERIFY2(expected, row.path.c_str());
      QCOMPARE(row.values, expected->values);
      QCOMPARE(row.differs, expected->differs);
    }
    QVERIFY(std::is_sorted(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.path < b.path; }));
    // The table marks the rows: "differences only" keeps the differing host rows, drops the rest.
    auto* model = page.environmentDiffModel();
    QStringList shown;
    for (int r = 0; r < model->rowCount(); ++r) shown << model->index(r, 0).data().toString();
    QVERIFY(shown.contains("run.hosts[1].clock_offset"));
    QVERIFY(shown.contains("run.hosts[1].name"));
    QVERIFY(!shown.contains("run.hosts[0].clock_offset"));
    QVERIFY(!shown.contains("run.hosts[1].ranks"));
  }

  void acrossFilesGivesTheSameHostRows() {
    SessionsPage page;
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file_, other_file_});
    QVERIFY(loaded.wait(10000));
    SessionRef in_other;
    for (int r = 0; r < page.catalogModel()->rowCount(); ++r)
      if (page.catalogModel()->row(r).file == QFileInfo(other_file_).absoluteFilePath().toStdString())
        in_other = page.catalogModel()->ref(r);
    QVERIFY(in_other.id > 0);
    const Comparison split = compare_refs({refByName(page, "two-hosts"), in_other});
    const Comparison same = compare_refs({refByName(page, "two-hosts"), refByName(page, "two-hosts-later")});
    QVERIFY2(split.error.empty(), split.error.c_str());
    QVERIFY(!split.same_file);
    for (const char* path : {"run.hosts[1].name", "run.hosts[1].clock_offset", "run.hosts[1].shardscope",
                             "run.hosts[1].ranks"}) {
      QVERIFY2(find_row(split.environment_diff, path), path);
      QCOMPARE(find_row(split.environment_diff, path)->values, find_row(same.environment_diff, path)->values);
      QCOMPARE(find_row(split.environment_diff, path)->differs, find_row(same.environment_diff, path)->differs);
    }
  }
};

QTEST_MAIN(SessionsHostsTest)
#include "sessions_hosts_test.moc"
