#include "nodespage.h"

#include "app/report/palette.h"
#include "charts.h"
#include "common.h"
#include "devicesetupdialog.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QVBoxLayout>

namespace edgetrain::ui {

namespace {
enum Column { Name, Address, Arch, Cores, Ram, Load, Cpu, Key, State, LastSeen, Columns };
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

    auto *form = keyForm();
    addRehearsalRow(form);
    layout->addLayout(form);
    addNodeTable(layout);
    connect(&m_workflow->nodes(), &app::NodeRegistry::nodesChanged, this, &NodesPage::refresh);
    connect(&m_workflow->nodes(), &app::NodeRegistry::keyLoaded, this, [this](const QString &path) {
        m_keyFile->setText(path); // also a lab's key, or a new one
        showKey();
        refresh();
    });
    connect(m_workflow, &app::Workflow::sessionChanged, this, [this] {
        m_keyFile->setText(m_workflow->session().keyFile);
        showKey();
    });
    m_keyFile->setText(m_workflow->session().keyFile);
    showKey();
    refresh();
}

void NodesPage::warn(const QString &text)
{
    QMessageBox::warning(this, tr("Nodes"), text);
}

QFormLayout *NodesPage::keyForm()
{
    auto *form = new QFormLayout;
    auto keyRow = new QHBoxLayout;
    m_keyFile = new QLineEdit(this);
    m_keyFile->setObjectName(QStringLiteral("keyFile"));
    m_keyFile->setPlaceholderText(tr("file holding the cluster key (edgetrain-node --key-file)"));
    auto *browse = new QPushButton(tr("Choose…"), this);
    auto *loadKey =
        new QPushButton(actionIcon(QString(), QStringLiteral("key")), tr("Load key"), this);
    auto *newKey = new QPushButton(actionIcon(QString(), QStringLiteral("new-key")),
                                   tr("New cluster key…"), this);
    newKey->setObjectName(QStringLiteral("newKey"));
    newKey->setToolTip(tr("Write a new random cluster key to a file (readable by you only) and "
                          "use it; every device then needs a copy"));
    keyRow->addWidget(m_keyFile, 1);
    keyRow->addWidget(browse);
    keyRow->addWidget(loadKey);
    keyRow->addWidget(newKey);
    form->addRow(tr("Cluster key:"), keyRow);

    // The fingerprint lets a user compare keys across devices without copying the key around.
    auto *fingerprintRow = new QHBoxLayout;
    m_fingerprint = new QLabel(this);
    m_fingerprint->setObjectName(QStringLiteral("keyFingerprint"));
    m_fingerprint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *setup = new QPushButton(actionIcon(QString(), QStringLiteral("setup-device")),
                                  tr("Set up a device…"), this);
    setup->setObjectName(QStringLiteral("setupDevice"));
    setup->setToolTip(tr("The commands that install edgetrain-node on a device, give it this "
                         "key and check its fingerprint"));
    fingerprintRow->addWidget(m_fingerprint, 1);
    fingerprintRow->addWidget(setup);
    form->addRow(tr("Fingerprint:"), fingerprintRow);

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

    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Cluster key file"),
                                                       lastFolder(QStringLiteral("keys")));
        if (f.isEmpty())
            return;
        m_keyFile->setText(f);
        rememberFolder(QStringLiteral("keys"), QFileInfo(f).absolutePath());
    });
    connect(newKey, &QPushButton::clicked, this, &NodesPage::newClusterKey);
    connect(setup, &QPushButton::clicked, this, &NodesPage::showDeviceSetup);
    // A field and its button (or Return) hand the text to the workflow; a refusal is shown. An
    // accepted address leaves its field; an accepted key stays and pairs the nodes found.
    using Action = bool (app::NodeRegistry::*)(const QString &, QString *);
    auto bind = [this](QLineEdit *field, QPushButton *button, Action action, bool isKey) {
        auto run = [this, field, action, isKey] {
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
    return form;
}

void NodesPage::addRehearsalRow(QFormLayout *form)
{
    // Rehearsal before a site visit: emulated devices on this machine (net/lab/edgelab.h).
    auto *labRow = new QHBoxLayout;
    // The devices and link of the last rehearsal are offered again (QSettings).
    QSettings settings;
    m_labDevices = new QLineEdit(
        settings.value(QStringLiteral("rehearsal/devices"), QStringLiteral("pi3:3,pi4:1"))
            .toString(),
        this);
    m_labDevices->setToolTip(tr("Device profiles and counts: pi3b (pi3), pi3bplus, pi4b-2gb, "
                                "pi4b-4gb (pi4), pi4b-8gb, pi5-4gb, pi5-8gb (pi5), jetson-nano, "
                                "laptop-i5-8250u (laptop), or a profile file"));
    m_labLink = new QLineEdit(settings.value(QStringLiteral("rehearsal/link")).toString(), this);
    m_labLink->setPlaceholderText(tr("link, e.g. 100mbit (default: each device's)"));
    m_labButton = new QPushButton(actionIcon(QString(), QStringLiteral("rehearse")),
                                  tr("Rehearse with emulated devices…"), this);
    m_labButton->setToolTip(tr("Start an edge lab: each device an edgetrain-node in its own "
                               "network namespace, its link shaped, its CPU and memory limited "
                               "to the profile's (needs root; otherwise plain local nodes)"));
    labRow->addWidget(m_labDevices, 2);
    labRow->addWidget(m_labLink, 1);
    labRow->addWidget(m_labButton);
    form->addRow(tr("Rehearse:"), labRow);
    m_labDevices->setObjectName(QStringLiteral("labDevices"));
    m_labLink->setObjectName(QStringLiteral("labLink"));
    m_labButton->setObjectName(QStringLiteral("labButton"));
    m_labState = new QLabel(this);
    m_labState->setObjectName(QStringLiteral("labState"));
    m_labState->setWordWrap(true);
    form->addRow(QString(), m_labState);
    app::LabControl &lab = m_workflow->lab();
    connect(m_labButton, &QPushButton::clicked, this, [this, &lab] {
        if (lab.busy())
            return lab.cancel();
        if (lab.isUp())
            return lab.stop();
        startRehearsal();
    });
    auto showLab = [this, &lab] {
        m_labButton->setText(lab.busy()   ? tr("Cancel")
                             : lab.isUp() ? tr("Stop the rehearsal")
                                          : tr("Rehearse with emulated devices…"));
        m_labDevices->setEnabled(!lab.busy() && !lab.isUp());
        m_labLink->setEnabled(!lab.busy() && !lab.isUp());
    };
    connect(&lab, &app::LabControl::busyChanged, this, showLab);
    connect(&lab, &app::LabControl::progress, m_labState, &QLabel::setText);
    connect(&lab, &app::LabControl::started, this, [this, showLab](const net::LabState &s) {
        showLab();
        m_keyFile->setText(s.key_file);
        QString text =
            tr("%1 up in %2, paired with the lab's key")
                .arg(counted(qint64(s.nodes.size()), tr("emulated device"), tr("emulated devices")))
                .arg(s.dir);
        if (s.time_scale > 1.0 + 1e-9)
            text += tr("; every device runs %1x slower than its profile (this machine has too "
                       "few cores)")
                        .arg(s.time_scale, 0, 'f', 2);
        for (const QString &m : s.not_emulated)
            text += QStringLiteral("\n") + tr("Not emulated: %1").arg(m);
        m_labState->setText(text);
    });
    connect(&lab, &app::LabControl::stopped, this, [this, showLab] {
        showLab();
        m_labState->setText(tr("The rehearsal lab was taken down."));
    });
    connect(&lab, &app::LabControl::failed, this, [this, showLab](const QString &m) {
        showLab();
        m_labState->setText(m);
        warn(m);
    });
    showLab();
}

void NodesPage::addNodeTable(QVBoxLayout *layout)
{
    m_table = new QTableWidget(0, Columns, this);
    m_table->setHorizontalHeaderLabels({tr("Name"), tr("Address"), tr("Arch"), tr("Cores"),
                                        tr("RAM"), tr("Load"), tr("CPU %"), tr("Key"), tr("State"),
                                        tr("Last seen")});
    m_table->horizontalHeaderItem(Key)->setToolTip(
        tr("The fingerprint of the key the node holds, as it says it (nodes before EdgeTrain "
           "0.1 say nothing)"));
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

    connect(pair, &QPushButton::clicked, this, [this] { m_workflow->nodes().pair(selectedKey()); });
    connect(pairAll, &QPushButton::clicked, &m_workflow->nodes(), &app::NodeRegistry::pairAll);
    connect(forget, &QPushButton::clicked, this,
            [this] { m_workflow->nodes().forget(selectedKey()); });
}

void NodesPage::showKey()
{
    const QString fingerprint = m_workflow->nodes().keyFingerprint();
    if (fingerprint.isEmpty()) {
        m_fingerprint->setText(tr("no cluster key loaded: load the file the devices have, or "
                                  "make one with New cluster key…"));
        m_fingerprint->setFont(font());
        return;
    }
    m_fingerprint->setText(fingerprint);
    m_fingerprint->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_fingerprint->setToolTip(
        tr("A device holds the same key when `edgetrain-cli key fingerprint` or its log "
           "(journalctl -u edgetrain-node) shows this fingerprint"));
}

void NodesPage::newClusterKey()
{
    const QString suggested = lastFolder(QStringLiteral("keys")) + QStringLiteral("/cluster.key");
    // The file dialog's own overwrite question is replaced by one that says what is at stake.
    const QString path = QFileDialog::getSaveFileName(this, tr("New cluster key"), suggested,
                                                      tr("Key files (*.key);;All files (*)"),
                                                      nullptr, QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty())
        return;
    const QFileInfo info(path);
    auto existing = net::ExistingKey::Refuse;
    if (info.exists() || info.isSymLink()) {
        const auto answer = QMessageBox::warning(
            this, tr("New cluster key"),
            tr("'%1' exists. It may be the key your devices use: a new key there locks every one "
               "of them out until it gets a copy of the new key.\n\nReplace it with a new key?")
                .arg(path),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes)
            return;
        existing = net::ExistingKey::Replace;
    }
    QString error;
    if (!m_workflow->nodes().newKeyFile(path, existing, &error)) {
        QMessageBox::warning(this, tr("New cluster key"), error);
        return;
    }
    rememberFolder(QStringLiteral("keys"), info.absolutePath());
}

void NodesPage::showDeviceSetup()
{
    const QString fingerprint = m_workflow->nodes().keyFingerprint();
    auto *dialog = new DeviceSetupDialog(
        fingerprint.isEmpty() ? QString() : m_workflow->session().keyFile, fingerprint, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open(); // window-modal, without a nested event loop
}

void NodesPage::startRehearsal()
{
    app::LabControl &lab = m_workflow->lab();
    if (lab.busy() || lab.isUp())
        return;
    QString error;
    if (!lab.start(m_labDevices->text(), m_labLink->text(), &error)) {
        QMessageBox::warning(this, tr("Nodes"), error);
        return;
    }
    QSettings settings;
    settings.setValue(QStringLiteral("rehearsal/devices"), m_labDevices->text());
    settings.setValue(QStringLiteral("rehearsal/link"), m_labLink->text());
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
    const QString ourKey = m_workflow->nodes().keyFingerprint();
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
        // The node's key against the app's: the first two groups are enough to tell them apart.
        const QString nodeKey = n.info.key_fingerprint;
        const QString shortKey = nodeKey.left(9) + QStringLiteral("…");
        QTableWidgetItem *keyItem =
            set(Key, nodeKey.isEmpty()   ? QString()
                     : ourKey.isEmpty()  ? shortKey
                     : nodeKey == ourKey ? tr("same key")
                                         : tr("other key (%1)").arg(shortKey));
        keyItem->setToolTip(nodeKey);
        keyItem->setForeground(!ourKey.isEmpty() && !nodeKey.isEmpty() && nodeKey != ourKey
                                   ? app::palette::kWarning
                                   : palette().text().color());
        QTableWidgetItem *state =
            set(State, app::nodeStateName(n.state) +
                           (n.detail.isEmpty() ? QString() : QStringLiteral(" — ") + n.detail));
        state->setToolTip(n.detail);
        const QColor colour = n.state == app::NodeView::State::Paired   ? app::palette::kGood
                              : n.state == app::NodeView::State::Lost   ? app::palette::kError
                              : n.state == app::NodeView::State::Locked ? app::palette::kWarning
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
