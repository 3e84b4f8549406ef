#include "app/gui/environment/environment_page.hpp"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "app/gui/common/cli_locator.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QTreeWidgetItem* add_section(QTreeWidget* tree, const QString& title) {
  auto* item = new QTreeWidgetItem(tree, {title});
  QFont bold = item->font(0);
  bold.setBold(true);
  item->setFont(0, bold);
  item->setExpanded(true);
  return item;
}

void add_row(QTreeWidgetItem* parent, const QString& name, const QString& value,
             const QString& note = {}) {
  auto* item = new QTreeWidgetItem(parent, {name, value.isEmpty() ? QStringLiteral("n/a") : value, note});
  item->setToolTip(2, note);
}

void add_versions(QTreeWidget* tree, const sessions::VersionsInfo& v) {
  auto* s = add_section(tree, QObject::tr("Versions"));
  add_row(s, "ShardScope", q(v.shardscope + " (git " + v.git_hash + ")"));
  add_row(s, "LibTorch", q(v.libtorch), v.torch_cuda.empty() ? "CPU build" : q("built for CUDA " + v.torch_cuda));
  add_row(s, "CUDA runtime", q(v.cuda_runtime), v.cuda_runtime.empty() ? "built without CUDA" : "");
  add_row(s, "CUDA driver", q(v.cuda_driver), v.cuda_driver.empty() ? "no NVIDIA driver" : "");
  add_row(s, "cuDNN", q(v.cudnn));
  add_row(s, "NCCL", q(v.nccl));
  add_row(s, "Qt", QString::fromLatin1(qVersion()), "this GUI's Qt");
  add_row(s, "Compiler", q(v.compiler));
}

void add_accelerator(QTreeWidget* tree, const sessions::AcceleratorInfo& a) {
  auto* s = add_section(tree, QObject::tr("Accelerator"));
  add_row(s, "Backend", q(a.backend));
  add_row(s, "GPU count", QString::number(a.gpus.size()), q(a.note));
  for (const auto& g : a.gpus)
    add_row(s, QString("GPU %1").arg(g.index),
            q(g.name + ", " + sessions::format_bytes(g.memory_bytes)),
            QString("compute capability %1.%2, %3 SMs, fp16 %4, bf16 %5")
                .arg(g.capability_major).arg(g.capability_minor).arg(g.multiprocessors)
                .arg(g.fp16_supported ? "yes" : "no").arg(g.bf16_supported ? "yes" : "no"));
}

void add_kernels(QTreeWidget* tree, const std::vector<sessions::KernelStatus>& kernels) {
  auto* s = add_section(tree, QObject::tr("Kernels"));
  for (const auto& k : kernels) {
    const QString state = QString("compiled in: %1, compatible: %2")
                              .arg(k.compiled_in ? "yes" : "no").arg(k.compatible ? "yes" : "no");
    std::string note = k.detail;
    if (!k.reason.empty()) note += (note.empty() ? "" : "; ") + k.reason;
    add_row(s, q(k.name + " (" + k.family + ")"), state, q(note));
  }
}

void add_host(QTreeWidget* tree, const sessions::HostInfo& h) {
  auto* s = add_section(tree, QObject::tr("Host"));
  add_row(s, "Hostname", q(h.hostname));
  add_row(s, "OS", q(h.os));
  add_row(s, "CPU", q(h.cpu_model), QString("%1 logical cores").arg(h.logical_cores));
  add_row(s, "Memory", q(sessions::format_bytes(h.memory_bytes)));
  add_row(s, "/dev/shm", h.shm_bytes ? q(sessions::format_bytes(*h.shm_bytes)) : "not mounted");
  add_row(s, "ulimit -l", h.memlock_soft_bytes ? q(sessions::format_bytes(*h.memlock_soft_bytes)) : "unlimited");
  add_row(s, "ulimit -n", h.nofile_soft ? QString::number(*h.nofile_soft) : "unlimited");
  add_row(s, "CUDA_VISIBLE_DEVICES", h.cuda_visible_devices ? q(*h.cuda_visible_devices) : "unset");
}

void add_checks(QTreeWidget* tree, const std::vector<sessions::EnvironmentCheck>& checks) {
  auto* s = add_section(tree, QObject::tr("Checks"));
  for (const auto& c : checks) {
    auto* item = new QTreeWidgetItem(s, {q(sessions::severity_name(c.severity)), q(c.message), q(c.hint)});
    item->setToolTip(1, q(c.message));
    item->setToolTip(2, q(c.hint));
    if (c.severity == sessions::CheckSeverity::kWarning) item->setForeground(0, QColor(0xb0, 0x60, 0x00));
  }
}

}  // namespace

EnvironmentPage::EnvironmentPage(QWidget* parent) : QWidget(parent) {
  summary_ = new QLabel(tr("Reading the environment report…"), this);
  summary_->setWordWrap(true);
  // A failing CLI can print one very long line: it wraps in the space there is, never widens the window.
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  refresh_button_ = new QPushButton(tr("&Refresh"), this);
  refresh_button_->setToolTip(tr("Run `shardscope report --json` again (F5)"));
  // F5 is View > Refresh's: the same key on the button too would be ambiguous, and fire neither.
  copy_button_ = new QPushButton(tr("&Copy as text"), this);
  copy_button_->setToolTip(tr("Copy the report in the same text form as `shardscope report`"));
  copy_button_->setEnabled(false);
  tree_ = new QTreeWidget(this);
  tree_->setColumnCount(3);
  tree_->setHeaderLabels({tr("Item"), tr("Value"), tr("Notes")});
  tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // A check's message is one long line: sized to it, the Value column pushed the Notes (each
  // check's fix) off the right edge. Capped, a long value is cut (its tooltip has it whole) and
  // the fix starts on screen.
  tree_->header()->setMaximumSectionSize(kValueColumnMaxWidth);
  tree_->setTextElideMode(Qt::ElideMiddle);
  tree_->setAlternatingRowColors(true);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(summary_, 1);
  buttons->addWidget(refresh_button_);
  buttons->addWidget(copy_button_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addWidget(tree_, 1);

  process_ = new QProcess(this);
  connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus) { onFinished(code); });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) showError(cli_missing_message(process_->program(), process_->errorString()));
  });
  connect(refresh_button_, &QPushButton::clicked, this, &EnvironmentPage::refresh);
  connect(copy_button_, &QPushButton::clicked, this,
          [this] { QApplication::clipboard()->setText(reportText()); emit statusMessage(tr("Report copied")); });
}

EnvironmentPage::~EnvironmentPage() { stop(); }

void EnvironmentPage::stop() {
  // ~QProcess kills a running child and emits finished(); by then the page's other children may be
  // gone (Ctrl+Q while the report loads used to crash in onFinished). Disconnect first, then reap.
  process_->disconnect(this);
  if (process_->state() != QProcess::NotRunning) {
    process_->kill();
    process_->waitForFinished(3000);
  }
}

bool EnvironmentPage::isLoading() const { return process_->state() != QProcess::NotRunning; }

qint64 EnvironmentPage::processId() const { return process_->processId(); }

void EnvironmentPage::refresh() {
  if (process_->state() != QProcess::NotRunning) return;
  refresh_button_->setEnabled(false);
  emit statusMessage(tr("Running shardscope report…"));
  process_->start(shardscope_cli_path(), {"report", "--json"});
}

void EnvironmentPage::onFinished(int exit_code) {
  refresh_button_->setEnabled(true);
  const QByteArray out = process_->readAllStandardOutput();
  const QString err = QString::fromLocal8Bit(process_->readAllStandardError()).trimmed();
  if (exit_code != 0) {
    showError(tr("shardscope report exited with code %1: %2").arg(exit_code).arg(err));
    return;
  }
  try {
    showReport(sessions::report_from_json(nlohmann::json::parse(out.toStdString())));
  } catch (const std::exception& e) {
    showError(tr("Could not read the report: %1").arg(e.what()));
  }
}

void EnvironmentPage::showReport(const sessions::EnvironmentReport& report) {
  report_ = report;
  report_.versions.qt = qVersion();
  has_report_ = true;
  tree_->clear();
  add_versions(tree_, report_.versions);
  add_accelerator(tree_, report_.accelerator);
  add_kernels(tree_, report_.kernels);
  add_host(tree_, report_.host);
  add_checks(tree_, report_.checks);
  int warnings = 0;
  for (const auto& c : report_.checks) warnings += c.severity == sessions::CheckSeverity::kWarning;
  summary_->setText(tr("%1 GPU(s), LibTorch %2, %3 warning(s)")
                        .arg(report_.accelerator.gpus.size()).arg(q(report_.versions.libtorch)).arg(warnings));
  copy_button_->setEnabled(true);
  emit statusMessage(tr("Environment report loaded"));
  emit reportLoaded();
}

void EnvironmentPage::showError(const QString& message) {
  refresh_button_->setEnabled(true);
  summary_->setText(message);
  emit statusMessage(message);
  emit reportFailed(message);
}

QString EnvironmentPage::reportText() const {
  return has_report_ ? q(sessions::format_report_text(report_)) : QString();
}

}  // namespace shardscope::gui
