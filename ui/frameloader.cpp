#include "frameloader.h"

#include "gallery.h"
#include "vision/framesource.h"
#include "vision/studentteacher.h"

#include <QElapsedTimer>
#include <QRectF>

#include <deque>
#include <numeric>

namespace edgetrain::ui {

class FrameReader : public QObject
{
    Q_OBJECT

public:
    void open(const QString &spec)
    {
        m_source.reset();
        try {
            m_source = vision::FrameSource::open(spec.toStdString());
            const cv::Size s = m_source->frameSize();
            Q_EMIT info(m_source->frameCount(), m_source->fps(), QSize(s.width, s.height));
        } catch (const std::exception &e) {
            Q_EMIT failed(QString::fromStdString(e.what()));
        }
    }
    void setStudent(const QString &dir)
    {
        m_student.reset();
        m_seconds.clear();
        if (dir.isEmpty())
            return;
        try {
            m_student = vision::StudentTeacher::fromSession(dir.toStdString());
        } catch (const std::exception &e) {
            Q_EMIT failed(QStringLiteral("the student cannot be shown: %1")
                              .arg(QString::fromStdString(e.what())));
        }
    }
    void read(int frame)
    {
        QImage image;
        if (m_source) {
            vision::Frame f;
            if (m_source->seek(frame) && m_source->read(f)) {
                image = Gallery::toImage(f.image);
                if (m_student)
                    detect(frame, f.image);
            }
        }
        Q_EMIT ready(frame, image);
    }

Q_SIGNALS:
    void info(int frames, double fps, QSize size);
    void failed(const QString &message);
    void ready(int frame, const QImage &image);
    void student(int frame, const QList<QRectF> &boxes, double frames_per_second);

private:
    void detect(int frame, const cv::Mat &bgr)
    {
        QElapsedTimer clock;
        clock.start();
        std::vector<vision::Detection> found;
        try {
            found = m_student->detect(bgr);
        } catch (const std::exception &e) {
            m_student.reset();
            Q_EMIT failed(QStringLiteral("the student failed on frame %1: %2")
                              .arg(frame)
                              .arg(QString::fromStdString(e.what())));
            return;
        }
        m_seconds.push_back(double(clock.nsecsElapsed()) * 1e-9);
        if (m_seconds.size() > 10)
            m_seconds.pop_front();
        const double mean =
            std::accumulate(m_seconds.begin(), m_seconds.end(), 0.0) / double(m_seconds.size());
        QList<QRectF> boxes;
        for (const vision::Detection &d : found)
            boxes.append(QRectF(d.box.x, d.box.y, d.box.width, d.box.height));
        Q_EMIT student(frame, boxes, mean > 0 ? 1.0 / mean : 0.0);
    }

    std::unique_ptr<vision::FrameSource> m_source;
    std::unique_ptr<vision::StudentTeacher> m_student;
    std::deque<double> m_seconds; // the last detections' durations
};

FrameLoader::FrameLoader(QObject *parent) : QObject(parent)
{
    m_reader = new FrameReader;
    m_reader->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_reader, &QObject::deleteLater);
    connect(m_reader, &FrameReader::info, this, &FrameLoader::sourceInfo);
    connect(m_reader, &FrameReader::failed, this, &FrameLoader::failed);
    connect(m_reader, &FrameReader::student, this, &FrameLoader::studentReady);
    connect(m_reader, &FrameReader::ready, this, [this](int frame, const QImage &image) {
        m_busy = false;
        if (m_pending)
            dispatch();
        else if (!image.isNull())
            Q_EMIT frameReady(frame, image);
    });
    m_thread.setObjectName(QStringLiteral("frames"));
    m_thread.start();
}

FrameLoader::~FrameLoader()
{
    m_thread.quit();
    m_thread.wait();
}

void FrameLoader::setSource(const QString &spec)
{
    m_pending.reset();
    QMetaObject::invokeMethod(
        m_reader, [r = m_reader, spec] { r->open(spec); }, Qt::QueuedConnection);
}

void FrameLoader::setStudent(const QString &sessionDir)
{
    QMetaObject::invokeMethod(
        m_reader, [r = m_reader, sessionDir] { r->setStudent(sessionDir); }, Qt::QueuedConnection);
}

void FrameLoader::request(int frame)
{
    m_pending = frame;
    if (!m_busy)
        dispatch();
}

void FrameLoader::dispatch()
{
    const int frame = *m_pending;
    m_pending.reset();
    m_busy = true;
    QMetaObject::invokeMethod(
        m_reader, [r = m_reader, frame] { r->read(frame); }, Qt::QueuedConnection);
}

} // namespace edgetrain::ui

#include "frameloader.moc"
