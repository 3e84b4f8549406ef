#pragma once
// A rank x step heat map of one per-rank series of a session (step time, a phase timer, the wait in
// a collective op: sessions::list_rank_step_series), rows the ranks of a rank filter ("node3",
// "0-63", "0-7,12": sessions::parse_rank_selection), so a straggler is a bright horizontal line.
// The grid comes from one aggregate read on a worker thread (sessions::load_rank_step_grid, at
// most kColumns step columns), drawn as a QCPColorMap with a titled colour scale; hovering a cell
// names its rank (host:rank), steps and value.

#include <memory>
#include <string>
#include <vector>

#include <QFutureWatcher>
#include <QWidget>

#include "sessions/events.hpp"
#include "sessions/rank_bands.hpp"

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QLabel;
class QLineEdit;
class QMouseEvent;

namespace shardscope::gui {

/// What one read brings: the series the session has, the grid of the chosen one, or why not.
struct HeatMapData {
  std::vector<sessions::RankStepSeries> series;
  sessions::RankStepGrid grid;
  std::vector<sessions::RankInfo> ranks;  ///< the session's ranks with their hosts
  std::string error;                      ///< a bad rank filter or an unreadable file
};

/// Reads session `session_id` of `file`: its series and the grid of `key` ("" = the first series)
/// for the ranks `filter` names. Never throws.
HeatMapData load_heat_map(const std::string& file, std::int64_t session_id, const std::string& key,
                          const std::string& filter, int max_columns);

class RankHeatMap : public QWidget {
  Q_OBJECT

 public:
  /// Step columns drawn at most: about one per pixel of a wide chart.
  static constexpr int kColumns = 1000;

  explicit RankHeatMap(QWidget* parent = nullptr);
  ~RankHeatMap() override;

  /// Shows session `session_id` of `file` (read again now, keeping the series and filter chosen).
  void setSession(const QString& file, std::int64_t session_id);
  /// Reads the same session again (a live run grew).
  void reload();
  void setSeries(const QString& key);
  void setRankFilter(const QString& text);

  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colorMap() const { return map_; }
  QCPColorScale* colorScale() const { return scale_; }
  QComboBox* seriesBox() const { return series_; }
  QLineEdit* rankFilter() const { return filter_; }
  QLabel* status() const { return status_; }
  const sessions::RankStepGrid& grid() const { return data_.grid; }
  /// The hover text of the cell at (`row`, `column`).
  QString cellText(int row, int column) const;
  bool isLoading() const;

 signals:
  void loaded();

 private:
  void buildPlot();
  void onLoaded();
  void fillSeries();
  void draw();
  void onMouseMove(QMouseEvent* event);
  QString rankName(int rank) const;

  QComboBox* series_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* status_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPColorMap* map_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  QFutureWatcher<HeatMapData>* watcher_ = nullptr;
  HeatMapData data_;
  std::string file_;
  std::int64_t session_id_ = 0;
  bool reload_pending_ = false;
};

}  // namespace shardscope::gui
