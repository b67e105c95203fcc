#pragma once

#include <QImage>
#include <QObject>
#include <QThread>

#include <memory>
#include <optional>

namespace edgetrain::ui {

class FrameReader;

/**
 * Frames of a source for viewers, decoded on a thread of their own: a request made while one is
 * being decoded replaces any request still waiting (a dragged slider asks for many frames; only
 * the last matters).
 */
class FrameLoader : public QObject
{
    Q_OBJECT

public:
    explicit FrameLoader(QObject *parent = nullptr);
    ~FrameLoader() override;
    void setSource(const QString &spec);
    void request(int frame);

Q_SIGNALS:
    void frameReady(int frame, const QImage &image);
    void failed(const QString &message);
    void sourceInfo(int frames, double fps, QSize size);

private:
    void dispatch();
    QThread m_thread;
    FrameReader *m_reader = nullptr;
    std::optional<int> m_pending;
    bool m_busy = false;
};

} // namespace edgetrain::ui
