#include "devicesetupdialog.h"

#include "common.h"

#include <QClipboard>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

namespace edgetrain::ui {

namespace {

/** `path` as a shell word: as it is when it is plain, in single quotes otherwise. */
QString shellWord(const QString &path)
{
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_./+:@=-]+$"));
    if (plain.match(path).hasMatch())
        return path;
    return QLatin1Char('\'') + QString(path).replace(QLatin1Char('\''), QStringLiteral("'\\''")) +
           QLatin1Char('\'');
}

} // namespace

QString DeviceSetupDialog::instructions(const QString &keyFile, const QString &fingerprint)
{
    const QString version = QStringLiteral(EDGETRAIN_VERSION);
    const QString package = QStringLiteral("edgetrain-node_%1_arm64.deb").arg(version);
    const QString key = keyFile.isEmpty() ? QStringLiteral("cluster.key") : shellWord(keyFile);
    QStringList t;
    t << QStringLiteral("# Make an edge device a node of this cluster (EdgeTrain %1).").arg(version)
      << QString()
      << QStringLiteral("# On this computer: copy the package and the cluster key to the device")
      << QStringLiteral("# (arm64 is for Raspberry Pi OS 64-bit and Jetson; another device takes")
      << QStringLiteral("# the package of its architecture: dpkg --print-architecture).")
      << QStringLiteral("scp %1 pi@DEVICE:").arg(package)
      << QStringLiteral("scp %1 pi@DEVICE:cluster.key").arg(key);
    t << QString() << QStringLiteral("# On the device (ssh pi@DEVICE):")
      << QStringLiteral("# 1. Install the node agent:")
      << QStringLiteral("sudo apt install ./%1").arg(package)
      << QStringLiteral(
             "# 2. Give it the cluster key (for the service's user only) and remove the copy:")
      << QStringLiteral("sudo install -m 600 -o edgetrain -g edgetrain cluster.key "
                        "/etc/edgetrain/cluster.key")
      << QStringLiteral("rm cluster.key")
      << QStringLiteral("# 3. Start it now and at every boot (it reads /etc/edgetrain/cluster.key "
                        "and /etc/edgetrain/node.conf):")
      << QStringLiteral("sudo systemctl enable --now edgetrain-node") << QString();
    if (fingerprint.isEmpty()) {
        t << QStringLiteral("# No cluster key is loaded yet: load one or make one (Nodes → New "
                            "cluster key…), then open this again for its fingerprint.");
    } else {
        t << QStringLiteral("# Check that the device holds this cluster's key: the fingerprint "
                            "must read")
          << QStringLiteral("#   %1").arg(fingerprint)
          << QStringLiteral("# in the node's log, the line \"cluster key fingerprint …\":")
          << QStringLiteral("sudo journalctl -u edgetrain-node | grep fingerprint")
          << QStringLiteral("# or before starting it (the same digits without the colons; the "
                            "device has no edgetrain-cli):")
          << QStringLiteral("{ printf 'edgetrain cluster key fingerprint'; sudo cat "
                            "/etc/edgetrain/cluster.key | tr -d ' \\t\\r\\n'; } | sha256sum | "
                            "cut -c1-32");
    }
    t << QString()
      << QStringLiteral("# The device then appears on the Nodes page; one with another key shows "
                        "\"locked: key refused\".");
    return t.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

DeviceSetupDialog::DeviceSetupDialog(const QString &keyFile, const QString &fingerprint,
                                     QWidget *parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Set up a device"));
    setWindowIcon(actionIcon(QString(), QStringLiteral("setup-device")));
    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(
        fingerprint.isEmpty()
            ? tr("Run these commands to make a device a node of this cluster. Load or make the "
                 "cluster key first: the device needs a copy of it.")
            : tr("Run these commands to make a device a node of this cluster. The device holds "
                 "the same key when it shows the same fingerprint. Send the key file itself only "
                 "over a channel you trust (scp, a USB stick), never by mail or chat."),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    if (!fingerprint.isEmpty()) {
        auto *shown = new QLabel(tr("Fingerprint: %1").arg(fingerprint), this);
        QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
        mono.setBold(true);
        shown->setFont(mono);
        shown->setTextInteractionFlags(Qt::TextSelectableByMouse);
        layout->addWidget(shown);
    }
    m_text = new QPlainTextEdit(instructions(keyFile, fingerprint), this);
    m_text->setObjectName(QStringLiteral("setupCommands"));
    m_text->setReadOnly(true);
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setMinimumSize(940, 420); // the longest command fits without scrolling
    layout->addWidget(m_text, 1);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    m_copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    m_copy->setObjectName(QStringLiteral("copyCommands"));
    m_copy->setIcon(actionIcon(QStringLiteral("edit-copy"), QStringLiteral("copy")));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_copy, &QPushButton::clicked, this, [this] {
        QGuiApplication::clipboard()->setText(text());
        m_copy->setText(tr("Copied"));
    });
}

QString DeviceSetupDialog::text() const
{
    return m_text->toPlainText();
}

} // namespace edgetrain::ui
