#pragma once

#include <QFrame>
#include <QImage>

#include <cstdint>

class QLabel;

namespace edgetrain::app {
struct DeviceView;
}

namespace edgetrain::ui {

/**
 * One device of the Deploy step's grid: its name and camera, the latest frame it ran the student
 * on (boxes drawn by the node), and its figures: boxes in that frame, frames/s, latency p50 / p95,
 * CPU and memory. A device that refused the student or dropped out is marked with the message,
 * its last frame greyed, until it reports again.
 */
class DeviceTile : public QFrame
{
    Q_OBJECT

public:
    explicit DeviceTile(const QString &node, QWidget *parent = nullptr);

    /** A report: live (clears a failure mark, counted by reports()) or the session's record of
     *  the last deployment. A JPEG that does not decode keeps the last frame. */
    void setView(const app::DeviceView &view, bool live = true);
    /** Marks the device as out of the run, for `message` (shown on the tile). */
    void setFailed(const QString &message);

    QString node() const { return m_node; }
    bool hasFrame() const { return !m_image.isNull(); }
    QImage frame() const { return m_image; }
    bool failed() const { return !m_failure.isEmpty(); }
    QString failure() const { return m_failure; }
    /** What the tile's figures line says. */
    QString figures() const;
    /** How many live reports it had. */
    int reports() const { return m_reports; }

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void showFrame();
    /** No higher than its frame needs at its width (4:3 until one came), so that a row of wide
     *  tiles is not letterboxed. */
    void fitHeight();

    QString m_node;
    QLabel *m_title, *m_picture, *m_figures, *m_message;
    QImage m_image;
    QString m_failure;
    int m_reports = 0;
};

} // namespace edgetrain::ui
