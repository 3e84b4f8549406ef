#include "app/gui/tune/tune_poller.hpp"

#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

namespace shardscope::gui {

TunePoller::TunePoller(QObject* parent) : QObject(parent) {
  qRegisterMetaType<TuneProgress>();
  timer_ = new QTimer(this);
  connect(timer_, &QTimer::timeout, this, &TunePoller::tick);
  watcher_ = new QFutureWatcher<TuneProgress>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, &TunePoller::onResult);
}

TunePoller::~TunePoller() { watcher_->waitForFinished(); }

void TunePoller::follow(const QString& db, const QString& run_uid, int interval_ms) {
  db_ = db.toStdString();
  run_uid_ = run_uid.toStdString();
  final_pending_ = false;
  timer_->start(interval_ms);
  tick();
}

void TunePoller::finish() {
  timer_->stop();
  final_pending_ = true;
  if (!watcher_->isRunning()) tick();
}

void TunePoller::stop() {
  timer_->stop();
  final_pending_ = false;
}

bool TunePoller::isFollowing() const { return timer_->isActive() || watcher_->isRunning(); }

void TunePoller::tick() {
  if (watcher_->isRunning() || db_.empty()) return;  // one read at a time; the next tick catches up
  const auto db = db_;
  const auto uid = run_uid_;
  watcher_->setFuture(QtConcurrent::run([db, uid] { return load_tune_progress(db, uid); }));
}

void TunePoller::onResult() {
  emit updated(watcher_->result());
  if (final_pending_) {
    final_pending_ = false;
    tick();  // the read that started before the tuner exited may have missed its last rows
  }
}

}  // namespace shardscope::gui
