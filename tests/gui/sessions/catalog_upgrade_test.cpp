// The Sessions page opens a session file of an older ShardScope as the CLI does: it upgrades the
// schema in place and lists the sessions (before, a version-3 file listed nothing); a file that
// is not a session store is named with the first reason and left byte for byte as it was.
#include <fstream>
#include <iterator>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/sessions/compare_data.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_schema.hpp"

namespace ss = shardscope::sessions;
using namespace shardscope::gui;

namespace {

// A file exactly as a schema-3 build wrote it, with one finished session of two steps.
void write_schema3_file(const std::string& path) {
  ss::SqliteDb db(path, true, false);
  ss::migrate_schema(db, 3);
  db.exec("INSERT INTO sessions(uid, name, status) VALUES('old-uid', 'h200 run', 'completed')");
  db.exec("INSERT INTO steps(session_id, step, rank, loss) VALUES(1, 0, 0, 4.5)");
  db.exec("INSERT INTO steps(session_id, step, rank, loss) VALUES(1, 1, 0, 4.25)");
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

class CatalogUpgradeTest : public QObject {
  Q_OBJECT

 private slots:
  void olderFileIsUpgradedAndListed() {
    const std::string path = dir_.filePath("v3.db").toStdString();
    write_schema3_file(path);
    const Catalog catalog = load_catalog({path});
    QVERIFY2(catalog.errors.empty(), catalog.errors.empty() ? "" : catalog.errors.front().c_str());
    QCOMPARE(catalog.rows.size(), std::size_t{1});
    QCOMPARE(catalog.rows[0].info.name, std::string("h200 run"));
    ss::StoreOpenOptions read_only;
    read_only.read_only = true;
    ss::Store store = ss::Store::open(path, read_only);  // upgraded: a read-only open now works
    QCOMPARE(store.schema_version(), ss::kSchemaVersion);
    QCOMPARE(ss::load_curve(store, catalog.rows[0].info.id, ss::Metric::kLoss).size(), std::size_t{2});
  }

  void sessionsPageListsTheOlderFile() {
    const QString path = dir_.filePath("v3-page.db");
    write_schema3_file(path.toStdString());
    SessionsPage page;
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({path});
    QVERIFY(loaded.wait(10000));
    QCOMPARE(page.catalogModel()->rowCount(), 1);
    QCOMPARE(page.catalogModel()->row(0).info.name, std::string("h200 run"));
  }

  void fileThatIsNoStoreIsNamedAndUntouched() {
    const std::string path = dir_.filePath("notes.db").toStdString();
    std::ofstream(path, std::ios::binary) << "these are notes, not a session store\n";
    const std::string before = bytes_of(path);
    const Catalog catalog = load_catalog({path});
    QCOMPARE(catalog.rows.size(), std::size_t{0});
    QCOMPARE(catalog.errors.size(), std::size_t{1});
    QVERIFY2(catalog.errors[0].rfind(path + ": ", 0) == 0, catalog.errors[0].c_str());
    QCOMPARE(bytes_of(path), before);
  }

 private:
  QTemporaryDir dir_;
};

QTEST_MAIN(CatalogUpgradeTest)
#include "catalog_upgrade_test.moc"
