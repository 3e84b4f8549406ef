// LaunchPage, "these hosts": the hostfile (open, edit, check, save), DeepSpeed's node selection
// flags (--num_nodes, --include/--exclude, --launcher, --ssh_port; the rendezvous fields of the
// Where section go with them) and the preflight of every host.
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "app/gui/launch/hostfile_editor.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/preflight_panel.hpp"

namespace shardscope::gui {
namespace {

constexpr int kFirstHostsMode = 2;  // where_: 0/1 this machine (CPU/GPUs), 2/3 these hosts (CPU/GPUs)

}  // namespace

QWidget* LaunchPage::buildHostsGroup() {
  auto* box = new QGroupBox(tr("These hosts"));
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);  // the editor's buttons take the whole width when narrow
  hostfile_ = new HostfileEditor;
  num_nodes_ = new QSpinBox;
  num_nodes_->setRange(0, 100000);
  num_nodes_->setSpecialValueText(tr("every host"));
  num_nodes_->setToolTip(tr("Use the first N hosts of the hostfile (--num_nodes)"));
  exclude_ = new QLineEdit;
  exclude_->setPlaceholderText(tr("none"));
  exclude_->setToolTip(tr("Hosts or GPUs to leave out, DeepSpeed syntax worker-1 or worker-1:0,1@worker-2 (--exclude)"));
  node_launcher_ = new QComboBox;
  node_launcher_->addItems({"ssh", "pdsh"});
  node_launcher_->setToolTip(tr("How a node agent is started on each host (--launcher); ssh is the default"));
  ssh_port_ = new QSpinBox;
  ssh_port_->setRange(0, 65535);
  ssh_port_->setSpecialValueText(tr("ssh's default"));
  ssh_port_->setToolTip(tr("The hosts' ssh port (--ssh_port)"));
  launcher_args_ = new QLineEdit;
  launcher_args_->setPlaceholderText(tr("none, e.g. -F ~/.ssh/lab_config"));
  launcher_args_->setToolTip(tr("Options for ssh (or pdsh), one string (--launcher_args)"));
  preflight_ = new PreflightPanel([this] { return preflight_arguments(spec()); });
  form->addRow(tr("Hostfile"), hostfile_);
  form->addRow(tr("Nodes"), num_nodes_);
  form->addRow(tr("Exclude"), exclude_);
  form->addRow(tr("Launcher"), node_launcher_);
  form->addRow(tr("ssh port"), ssh_port_);
  form->addRow(tr("ssh options"), launcher_args_);
  form->addRow(preflight_->button());  // the table is a tab beside the logs (buildWatch)
  connect(hostfile_, &HostfileEditor::changed, this, &LaunchPage::updateCliTwin);
  for (auto* spin : {num_nodes_, ssh_port_}) connect(spin, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  for (auto* field : {exclude_, launcher_args_}) connect(field, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  connect(node_launcher_, &QComboBox::currentIndexChanged, this, &LaunchPage::updateCliTwin);
  hosts_group_ = box;
  return box;
}

void LaunchPage::fillHostsSpec(LaunchSpec& s) const {
  if (where_->currentIndex() < kFirstHostsMode) return;
  s.hostfile = hostfile_->path().toStdString();
  if (s.hostfile.empty()) throw std::invalid_argument("Hostfile: open a hostfile, or write one and Save it");
  s.num_nodes = num_nodes_->value();
  s.exclude = exclude_->text().trimmed().toStdString();
  s.launcher = node_launcher_->currentIndex() == 0 ? std::string() : node_launcher_->currentText().toStdString();
  s.ssh_port = ssh_port_->value();
  s.launcher_args = launcher_args_->text().trimmed().toStdString();
}

void LaunchPage::setWhere(int index) { where_->setCurrentIndex(index); }

// The Where section's fields mean slightly different things across hosts: ranks are per host, and
// a GPU run may leave the count to the hostfile's slots.
void LaunchPage::showWhere() {
  const int where = where_->currentIndex();
  const bool hosts = where >= kFirstHostsMode, gpus = where % 2 == 1;
  hosts_group_->setVisible(hosts && !ownCommand());
  include_->setEnabled(gpus);
  include_->setPlaceholderText(hosts ? tr("every slot, e.g. worker-0@worker-1:0,2") : tr("all visible GPUs"));
  processes_->setMinimum(hosts && gpus ? 0 : 1);
  processes_->setSpecialValueText(hosts && gpus ? tr("every slot") : QString());
  processes_->setToolTip(hosts ? tr("Ranks to start on every host (--num_procs N CPU ranks, or --num_gpus N)")
                               : tr("Ranks to start (--num_procs or --num_gpus)"));
  if (auto* form = qobject_cast<QFormLayout*>(processes_->parentWidget()->layout()))
    if (auto* label = qobject_cast<QLabel*>(form->labelForField(processes_)))
      label->setText(hosts ? tr("Ranks per host") : tr("Ranks"));
}

}  // namespace shardscope::gui
