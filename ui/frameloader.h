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
 * the last matters). With a student set, the same thread runs the session's full-frame student on
 * every frame it decodes and sends its boxes (studentReady, just before frameReady); the GUI
 * thread never runs a model.
 */
class FrameLoader : public QObject
{
    Q_OBJECT

public:
    explicit FrameLoader(QObject *parent = nullptr);
    ~FrameLoader() override;
    void setSource(const QString &spec);
    void request(int frame);
    /** Runs the full-frame student of the session in `sessionDir` (vision::StudentTeacher) on
     *  the frames read from now on; an empty dir stops it. A student that cannot be loaded is
     *  reported through failed() and not run. */
    void setStudent(const QString &sessionDir);

Q_SIGNALS:
    void frameReady(int frame, const QImage &image);
    /** The student's boxes on `frame` (source pixels, at its threshold) and its detection speed
     *  (frames/s, averaged over the last frames; detection alone, not decoding). */
    void studentReady(int frame, const QList<QRectF> &boxes, double frames_per_second);
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
