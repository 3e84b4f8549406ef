#pragma once
// Follows a session that a run is writing: every ~500 ms a worker thread opens the file read-only
// (WAL: the collector is never blocked) and reads only what is new: each rank's steps after its
// last seen step, timer breakdowns after the last step every rank has reported, the session's
// status and, once it ended, the ranks' exit codes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <QFutureWatcher>
#include <QObject>

#include "app/gui/launch/doctor_alarm.hpp"
#include "sessions/session_reader.hpp"

class QTimer;

namespace shardscope::gui {

struct LiveCursor {
  std::int64_t session_id = 0;            ///< 0 until the session row exists
  std::map<int, std::int64_t> last_step;  ///< per rank
  std::int64_t timers_after = -1;         ///< breakdowns of later steps are re-read (ranks lag)
  bool alarm_found = false;               ///< the doctor's alarm came: its findings are not read again
};

struct LiveUpdate {
  std::int64_t session_id = 0;
  std::vector<sessions::StepMetrics> steps;        ///< new rows and the last ones again, by rank then step
  std::vector<sessions::TimerBreakdown> timers;    ///< steps after cursor.timers_after (replace older copies)
  std::optional<sessions::SessionInfo> info;
  std::vector<sessions::RankDetail> ranks;         ///< filled once the session has ended
  std::optional<DoctorAlarm> alarm;                ///< the run doctor's first error finding, once
  std::string error;
};

/// One incremental read of session `uid` of `file` from `cursor`; never throws.
LiveUpdate poll_session(const std::string& file, const std::string& uid, const LiveCursor& cursor);
/// Moves `cursor` past what `update` brought.
void advance_cursor(LiveCursor& cursor, const LiveUpdate& update);

class SessionPoller : public QObject {
  Q_OBJECT

 public:
  explicit SessionPoller(QObject* parent = nullptr);
  ~SessionPoller() override;

  /// Starts following `uid` in `file` from the beginning.
  void follow(const QString& file, const QString& uid, int interval_ms = 500);
  /// Polls once more (the final read after the run ended), then stops.
  void finish();
  void stop();
  bool isFollowing() const;

 signals:
  void updated(const shardscope::gui::LiveUpdate& update);

 private:
  void tick();
  void onResult();

  QTimer* timer_ = nullptr;
  QFutureWatcher<LiveUpdate>* watcher_ = nullptr;
  std::string file_, uid_;
  LiveCursor cursor_;
  bool final_pending_ = false;
};

}  // namespace shardscope::gui

Q_DECLARE_METATYPE(shardscope::gui::LiveUpdate)
