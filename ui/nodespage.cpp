#include "nodespage.h"

#include "charts.h"
#include "common.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace edgetrain::ui {

namespace {
enum Column { Name, Address, Arch, Cores, Ram, Load, Cpu, State, LastSeen, Columns };
}

NodesPage::NodesPage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("1  Nodes"),
        tr("Edge devices running edgetrain-node appear here by themselves (LAN discovery). "
           "Pair them with the cluster key; add a node by address where multicast is blocked."),
        this));

    auto *form = new QFormLayout;
    auto keyRow = new QHBoxLayout;
    m_keyFile = new QLineEdit(this);
    m_keyFile->setPlaceholderText(tr("file holding the cluster key (edgetrain-node --key-file)"));
    auto *browse = new QPushButton(tr("Choose…"), this);
    auto *loadKey = new QPushButton(tr("Load key"), this);
    keyRow->addWidget(m_keyFile, 1);
    keyRow->addWidget(browse);
    keyRow->addWidget(loadKey);
    form->addRow(tr("Cluster key:"), keyRow);

    auto *probeRow = new QHBoxLayout;
    m_probe = new QLineEdit(this);
    m_probe->setPlaceholderText(tr("discovery address, e.g. 192.168.1.20:45454"));
    auto *addProbe = new QPushButton(tr("Probe"), this);
    probeRow->addWidget(m_probe, 1);
    probeRow->addWidget(addProbe);
    form->addRow(tr("Discover at:"), probeRow);

    auto *addrRow = new QHBoxLayout;
    m_address = new QLineEdit(this);
    m_address->setPlaceholderText(tr("control address, e.g. 192.168.1.20:7000"));
    auto *addNode = new QPushButton(tr("Add node"), this);
    addrRow->addWidget(m_address, 1);
    addrRow->addWidget(addNode);
    form->addRow(tr("Add by address:"), addrRow);
    layout->addLayout(form);

    m_table = new QTableWidget(0, Columns, this);
    m_table->setHorizontalHeaderLabels({tr("Name"), tr("Address"), tr("Arch"), tr("Cores"),
                                        tr("RAM"), tr("Load"), tr("CPU %"), tr("State"),
                                        tr("Last seen")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(State, QHeaderView::Stretch);
    m_table->setAlternatingRowColors(true);
    layout->addWidget(m_table, 1);

    auto *buttons = new QHBoxLayout;
    auto *pair = new QPushButton(tr("Pair"), this);
    auto *pairAll = new QPushButton(tr("Pair all"), this);
    auto *forget = new QPushButton(tr("Forget"), this);
    pair->setToolTip(tr("Prove the cluster key to the selected node and watch its metrics"));
    buttons->addWidget(pair);
    buttons->addWidget(pairAll);
    buttons->addStretch(1);
    buttons->addWidget(forget);
    layout->addLayout(buttons);

    auto warn = [this](const QString &text) { QMessageBox::warning(this, tr("Nodes"), text); };
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Cluster key file"));
        if (!f.isEmpty())
            m_keyFile->setText(f);
    });
    // A field and its button (or Return) hand the text to the workflow; a refusal is shown. An
    // accepted address leaves its field; an accepted key stays and pairs the nodes found.
    using Action = bool (app::NodeRegistry::*)(const QString &, QString *);
    auto bind = [this, warn](QLineEdit *field, QPushButton *button, Action action, bool isKey) {
        auto run = [this, warn, field, action, isKey] {
            QString error;
            if (!(m_workflow->nodes().*action)(field->text().trimmed(), &error))
                return warn(error);
            if (isKey)
                m_workflow->nodes().pairAll();
            else
                field->clear();
        };
        connect(button, &QPushButton::clicked, this, run);
        connect(field, &QLineEdit::returnPressed, this, run);
    };
    bind(m_keyFile, loadKey, &app::NodeRegistry::setKeyFile, true);
    bind(m_probe, addProbe, &app::NodeRegistry::addProbe, false);
    bind(m_address, addNode, &app::NodeRegistry::addNode, false);
    connect(pair, &QPushButton::clicked, this, [this] { m_workflow->nodes().pair(selectedKey()); });
    connect(pairAll, &QPushButton::clicked, &m_workflow->nodes(), &app::NodeRegistry::pairAll);
    connect(forget, &QPushButton::clicked, this,
            [this] { m_workflow->nodes().forget(selectedKey()); });
    connect(&m_workflow->nodes(), &app::NodeRegistry::nodesChanged, this, &NodesPage::refresh);
    connect(m_workflow, &app::Workflow::sessionChanged, this,
            [this] { m_keyFile->setText(m_workflow->session().keyFile); });
    m_keyFile->setText(m_workflow->session().keyFile);
    refresh();
}

QString NodesPage::selectedKey() const
{
    const auto rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? QString()
                          : m_table->item(rows.first().row(), Name)->data(Qt::UserRole).toString();
}

void NodesPage::refresh()
{
    const QString selected = selectedKey();
    const auto &nodes = m_workflow->nodes().all();
    m_table->setRowCount(int(nodes.size()));
    const QDateTime now = QDateTime::currentDateTimeUtc();
    int row = 0;
    for (const auto &[key, n] : nodes) {
        auto set = [&](int column, const QString &text, Qt::Alignment align = Qt::AlignLeft) {
            QTableWidgetItem *item = m_table->item(row, column);
            if (!item) {
                item = new QTableWidgetItem;
                m_table->setItem(row, column, item);
            }
            item->setText(text);
            item->setTextAlignment(align | Qt::AlignVCenter);
            return item;
        };
        set(Name, n.info.name)->setData(Qt::UserRole, key);
        set(Address, key);
        set(Arch, n.info.arch);
        set(Cores, n.info.cores > 0 ? QString::number(n.info.cores) : QString(), Qt::AlignRight);
        set(Ram, n.info.ram_bytes > 0 ? formatBytes(double(n.info.ram_bytes)) : QString(),
            Qt::AlignRight);
        set(Load,
            n.sample || n.discovered
                ? QString::number(n.sample ? n.sample->load1 : n.info.load, 'f', 2)
                : QString(),
            Qt::AlignRight);
        set(Cpu, n.sample ? QString::number(n.sample->cpu_percent, 'f', 0) : QString(),
            Qt::AlignRight);
        QTableWidgetItem *state =
            set(State, app::nodeStateName(n.state) +
                           (n.detail.isEmpty() ? QString() : QStringLiteral(" — ") + n.detail));
        state->setToolTip(n.detail);
        const QColor colour = n.state == app::NodeView::State::Paired   ? QColor(0x1b, 0x7f, 0x3a)
                              : n.state == app::NodeView::State::Lost   ? QColor(0xb0, 0x00, 0x20)
                              : n.state == app::NodeView::State::Locked ? QColor(0xb0, 0x60, 0x00)
                                                                        : palette().text().color();
        state->setForeground(colour);
        const qint64 ago = n.lastSeen.isValid() ? n.lastSeen.secsTo(now) : -1;
        set(LastSeen, ago < 0 ? tr("never") : ago < 2 ? tr("now") : tr("%1 s ago").arg(ago));
        if (key == selected)
            m_table->selectRow(row);
        ++row;
    }
}

} // namespace edgetrain::ui
