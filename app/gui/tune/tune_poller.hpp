#pragma once
// Follows a tune run while `shardscope tune` records it: every ~500 ms a worker thread reads the
// run and its trials from the session store, read-only (load_tune_progress), so the tuner's
// writes are never blocked and the GUI thread never waits on the file.

#include <QFutureWatcher>
#include <QObject>

#include "app/gui/tune/tune_results.hpp"

class QTimer;

namespace shardscope::gui {

class TunePoller : public QObject {
  Q_OBJECT

 public:
  explicit TunePoller(QObject* parent = nullptr);
  ~TunePoller() override;

  /// Reads run `run_uid` (empty: the newest) of `db` now and every `interval_ms` after.
  void follow(const QString& db, const QString& run_uid, int interval_ms = 500);
  /// Reads once more (what the tuner wrote last), then stops.
  void finish();
  void stop();
  bool isFollowing() const;

 signals:
  void updated(const shardscope::gui::TuneProgress& progress);

 private:
  void tick();
  void onResult();

  QTimer* timer_ = nullptr;
  QFutureWatcher<TuneProgress>* watcher_ = nullptr;
  std::string db_, run_uid_;
  bool final_pending_ = false;
};

}  // namespace shardscope::gui

Q_DECLARE_METATYPE(shardscope::gui::TuneProgress)
