#pragma once
// Axis tickers shared by every chart. Steps are integers, so a step axis never ticks 1.5 or 13.5,
// and its labels never run together (after a resume at step 22 QCustomPlot's own ticker gave
// "22.5 25 27.5 30" on a 100 px axis: "22.52527.530"). Value axes never print the same label
// twice: where the format's precision makes two ticks look alike ("2·10⁻³" for 0.0015 and 0.002
// on a log axis of less than two decades, where QCustomPlot falls back to linear ticks), the
// labels get digits until they differ; ticks are as many as the axis's length holds, and never
// closer than their labels need.

#include <qcustomplot.h>

namespace shardscope::gui {

/// Ticks at integer steps only (1, 2 or 5 times a power of ten, or 25, 250, ...), as many as the
/// axis's width holds labels of the widest step with a digit's gap between them, at most `max_ticks`.
class StepTicker : public QCPAxisTicker {
 public:
  StepTicker(QCPAxis* axis, int max_ticks) : axis_(axis), max_ticks_(max_ticks) {}

  /// The integer tick step for a range of `span` steps shown with at most `count` ticks.
  static double integer_step(double span, int count);

 protected:
  double getTickStep(const QCPRange& range) override;
  int getSubTickCount(double tick_step) override;
  QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override;

 private:
  QCPAxis* axis_;
  int max_ticks_;
};

/// How many ticks an axis's length holds: labels a line and a half apart on a vertical axis, the
/// widest of `sample_label` with a digit's gap on a horizontal one; from `fewest` to `most`.
int ticks_that_fit(const QCPAxis* axis, const QString& sample_label, int fewest, int most);

/// Drops ticks (and their labels) closer to the last one kept than a label needs: a log axis's
/// linear fallback ticks crowd at its top (0.0125 and 0.015 were 12 px apart on a 120 px chart).
void keep_apart(const QCPAxis* axis, QVector<double>& ticks, QVector<QString>& labels);

/// `Base`'s ticks, as many as the axis's length holds (QCustomPlot asks for 5 whatever the
/// length: 11 px apart on a chart 120 px high), with labels that never repeat (more digits until
/// adjacent labels differ).
template <class Base>
class ReadableTicker : public Base {
 public:
  explicit ReadableTicker(QCPAxis* axis) : axis_(axis) {}

  void generate(const QCPRange& range, const QLocale& locale, QChar format, int precision, QVector<double>& ticks,
                QVector<double>* sub_ticks, QVector<QString>* labels) override {
    this->setTickCount(ticks_that_fit(axis_, QStringLiteral("0.0000"), 2, 5));
    Base::generate(range, locale, format, precision, ticks, sub_ticks, labels);
    if (!labels) return;
    for (int digits = precision + 1; repeats(*labels) && digits <= precision + 6; ++digits)
      *labels = this->createLabelVector(ticks, locale, format, digits);
    keep_apart(axis_, ticks, *labels);
  }

  static bool repeats(const QVector<QString>& labels) {
    for (int i = 1; i < labels.size(); ++i)
      if (labels[i] == labels[i - 1]) return true;
    return false;
  }

 private:
  QCPAxis* axis_;
};

/// Powers of ten on a log axis (QCustomPlot's), and below 1.6 decades, where QCustomPlot falls
/// back to linear ticks that bunch at the top (an lr axis from 1.4e-4 to 2e-3 had no label in its
/// lower half), 1, 2 and 5 times the powers of ten in the range (1 to 9 times when those are fewer
/// than three).
class LogTicker : public QCPAxisTickerLog {
 protected:
  QVector<double> createTickVector(double tick_step, const QCPRange& range) override;
  QVector<double> createSubTickVector(int sub_tick_count, const QVector<double>& ticks) override;

 private:
  bool in_decades_ = true;  ///< the last range spanned 1.6 decades or more: QCustomPlot's own ticks
};

/// Sets `axis` to integer step ticks (StepTicker).
void use_step_ticks(QCPAxis* axis, int max_ticks);

}  // namespace shardscope::gui
