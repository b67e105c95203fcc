#include "devicetile.h"

#include "app/report/palette.h"
#include "app/session/deploymentrun.h"
#include "charts.h"

#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

namespace edgetrain::ui {

DeviceTile::DeviceTile(const QString &node, QWidget *parent) : QFrame(parent), m_node(node)
{
    setFrameShape(QFrame::StyledPanel);
    setObjectName(QStringLiteral("deviceTile"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->setSpacing(4);
    m_title = new QLabel(this);
    m_title->setTextFormat(Qt::RichText);
    m_title->setText(QStringLiteral("<b>%1</b>").arg(node.toHtmlEscaped()));
    m_picture = new QLabel(this);
    m_picture->setAlignment(Qt::AlignCenter);
    m_picture->setMinimumSize(160, 120);
    // The frame follows the tile's size, not the other way round.
    m_picture->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    m_picture->setStyleSheet(QStringLiteral("background: #202428; color: #b0b8c0;"));
    m_picture->setText(tr("waiting for the first frame…"));
    m_figures = new QLabel(this);
    m_figures->setWordWrap(true);
    m_figures->hide(); // until the first report
    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    m_message->setStyleSheet(
        QStringLiteral("color: %1; font-weight: bold;").arg(app::palette::kError.name()));
    m_message->hide();
    layout->addWidget(m_title);
    layout->addWidget(m_picture, 1);
    layout->addWidget(m_figures);
    layout->addWidget(m_message);
}

void DeviceTile::setView(const app::DeviceView &view, bool live)
{
    m_title->setText(view.source.isEmpty()
                         ? QStringLiteral("<b>%1</b>").arg(m_node.toHtmlEscaped())
                         : QStringLiteral("<b>%1</b> · camera %2")
                               .arg(m_node.toHtmlEscaped(), view.source.toHtmlEscaped()));
    const QImage decoded = QImage::fromData(view.jpeg, "JPEG");
    if (!decoded.isNull())
        m_image = decoded;
    m_figures->setText(tr("%1 boxes · %2 frames/s · latency %3 / %4 ms (p50 / p95) · CPU %5 % · %6")
                           .arg(view.frameDetections)
                           .arg(view.fps, 0, 'f', 1)
                           .arg(view.latencyMsP50, 0, 'f', 0)
                           .arg(view.latencyMsP95, 0, 'f', 0)
                           .arg(view.cpuPercent, 0, 'f', 0)
                           .arg(formatBytes(double(view.rssBytes))));
    m_figures->show();
    if (live) {
        ++m_reports;
        m_failure.clear();
        m_message->hide();
        setStyleSheet(QString());
    }
    fitHeight();
    showFrame();
}

void DeviceTile::setFailed(const QString &message)
{
    m_failure = message;
    m_message->setText(message);
    m_message->show();
    setStyleSheet(
        QStringLiteral("#deviceTile { border: 2px solid %1; }").arg(app::palette::kError.name()));
    if (m_image.isNull())
        m_picture->setText(tr("no frame"));
    fitHeight();
    showFrame();
}

QString DeviceTile::figures() const
{
    return m_figures->text();
}

void DeviceTile::resizeEvent(QResizeEvent *event)
{
    QFrame::resizeEvent(event);
    fitHeight();
    showFrame();
}

void DeviceTile::fitHeight()
{
    const QMargins m = layout()->contentsMargins();
    const int inner = width() - m.left() - m.right(), spacing = layout()->spacing();
    const double aspect =
        m_image.isNull() ? 0.75 : double(m_image.height()) / std::max(1, m_image.width());
    int h = m.top() + m.bottom() + m_title->sizeHint().height() + spacing +
            std::max(m_picture->minimumHeight(), int(inner * aspect));
    if (!m_figures->isHidden())
        h += spacing + m_figures->heightForWidth(inner);
    if (!m_message->isHidden())
        h += spacing + m_message->heightForWidth(inner);
    setMaximumHeight(h + 2 * frameWidth());
}

void DeviceTile::showFrame()
{
    if (m_image.isNull())
        return;
    // A device out of the run keeps its last frame, greyed: what it saw, no longer live.
    const QImage shown =
        m_failure.isEmpty() ? m_image : m_image.convertToFormat(QImage::Format_Grayscale8);
    m_picture->setPixmap(QPixmap::fromImage(
        shown.scaled(m_picture->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation)));
}

} // namespace edgetrain::ui
