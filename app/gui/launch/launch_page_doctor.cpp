// LaunchPage, the run doctor's banner (issue 28 item 2): when the launcher stores an error finding
// for the run (a hang, a NaN loss, an OOM), the banner names the culprit host:rank, the collective
// (op and sequence) and the step, with links to the culprit's log lines and to its curves there.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTabWidget>
#include <qcustomplot.h>

#include "app/gui/common/rank_heat_map.hpp"
#include "app/gui/launch/doctor_alarm.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/launch/rank_console.hpp"

namespace shardscope::gui {

void LaunchPage::showDoctorAlarm(const DoctorAlarm& alarm) {
  doctor_html_ = QString::fromStdString(doctor_banner_html(alarm));
  showBanner(doctor_html_ + end_note_, true);
  emit statusMessage(tr("The run doctor: %1").arg(QString::fromStdString(alarm.finding.summary)));
}

void LaunchPage::onBannerLink(const QString& link) {
  bool is_log = false;
  int rank = -1;
  std::int64_t step = -1;
  if (!parse_doctor_link(link.toStdString(), is_log, rank, step)) return;
  if (!is_log) return focusRank(rank, step);
  console_->setRankFilter(QString::number(rank));
  watch_tabs_->setCurrentWidget(console_);
}

// The curves stop following and show the steps around `step`; a rank's own curves are drawn bold
// over the others faded; with bands, the heat map shows the rank among its neighbours.
void LaunchPage::focusRank(int rank, std::int64_t step) {
  follow_->setChecked(true);  // Pause view: the charts stay where the link put them
  plots_->focusRank(rank, step);
  if (plots_->bandMode()) {
    heat_map_->setRankFilter(QString("%1-%2").arg(std::max(0, rank - 8)).arg(rank + 8));
    watch_tabs_->setCurrentWidget(heat_map_);
  }
}

}  // namespace shardscope::gui
