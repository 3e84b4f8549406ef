#include "app/gui/launch/session_poller.hpp"

#include <algorithm>

#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include "sessions/errors.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {

namespace ss = shardscope::sessions;

// A step's row can gain columns after it was first read: a watched DeepSpeed run's series come
// file by file (lr in engine.step(), the script's own loss after it), so the follower rewrites a
// step when its next file is read. The last kRereadSteps steps of each rank are read again.
constexpr std::int64_t kRereadSteps = 64;

LiveUpdate poll_session(const std::string& file, const std::string& uid, const LiveCursor& cursor) {
  LiveUpdate out;
  try {
    ss::StoreOpenOptions options;
    options.read_only = true;
    options.integrity = ss::IntegrityCheck::kSkip;  // a live view re-reads twice a second; the catalog checked it
    ss::Store store = ss::Store::open(file, options);
    out.session_id = cursor.session_id ? cursor.session_id : ss::find_session(store, uid);
    for (int rank : ss::load_step_ranks(store, out.session_id)) {
      const auto it = cursor.last_step.find(rank);
      const std::int64_t after = it == cursor.last_step.end() ? INT64_MIN : it->second - kRereadSteps;
      auto rows = ss::load_steps_after(store, out.session_id, rank, after);
      out.steps.insert(out.steps.end(), rows.begin(), rows.end());
    }
    out.timers = ss::load_timer_breakdowns_after(store, out.session_id, cursor.timers_after);
    if (!cursor.alarm_found) out.alarm = read_doctor_alarm(store, out.session_id);
    const ss::SessionDetail detail = ss::load_session(store, out.session_id);
    out.info = detail.info;
    if (detail.info.status != "running") out.ranks = detail.ranks;
  } catch (const ss::StoreError& e) {
    // Before the collector's first commit the file or the session row may not exist yet.
    if (e.kind() != ss::ErrorKind::kNotFound) out.error = e.what();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

void advance_cursor(LiveCursor& cursor, const LiveUpdate& update) {
  if (update.session_id) cursor.session_id = update.session_id;
  if (update.alarm) cursor.alarm_found = true;
  for (const auto& m : update.steps) cursor.last_step[m.rank] = std::max(cursor.last_step[m.rank], m.step);
  // Timers are complete for a step once every rank reported it: re-read everything after that.
  if (!cursor.last_step.empty()) {
    std::int64_t complete = INT64_MAX;
    for (const auto& [rank, step] : cursor.last_step) complete = std::min(complete, step);
    cursor.timers_after = std::max<std::int64_t>(cursor.timers_after, complete - 1);
  }
}

SessionPoller::SessionPoller(QObject* parent) : QObject(parent) {
  qRegisterMetaType<LiveUpdate>();
  timer_ = new QTimer(this);
  connect(timer_, &QTimer::timeout, this, &SessionPoller::tick);
  watcher_ = new QFutureWatcher<LiveUpdate>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, &SessionPoller::onResult);
}

SessionPoller::~SessionPoller() { watcher_->waitForFinished(); }

void SessionPoller::follow(const QString& file, const QString& uid, int interval_ms) {
  file_ = file.toStdString();
  uid_ = uid.toStdString();
  cursor_ = {};
  final_pending_ = false;
  timer_->start(interval_ms);
  tick();
}

void SessionPoller::finish() {
  timer_->stop();
  final_pending_ = true;
  if (!watcher_->isRunning()) tick();
}

void SessionPoller::stop() {
  timer_->stop();
  final_pending_ = false;
}

bool SessionPoller::isFollowing() const { return timer_->isActive() || watcher_->isRunning(); }

void SessionPoller::tick() {
  if (watcher_->isRunning() || uid_.empty()) return;  // one read at a time; the next tick catches up
  const auto file = file_;
  const auto uid = uid_;
  const auto cursor = cursor_;
  watcher_->setFuture(QtConcurrent::run([file, uid, cursor] { return poll_session(file, uid, cursor); }));
}

void SessionPoller::onResult() {
  const LiveUpdate update = watcher_->result();
  const auto last_before = cursor_.last_step;
  advance_cursor(cursor_, update);
  emit updated(update);
  if (final_pending_) {
    final_pending_ = false;
    // The run has ended: one more read picks up the rows committed in its last moments.
    if (cursor_.last_step != last_before) finish();
  }
}

}  // namespace shardscope::gui
