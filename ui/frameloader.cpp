#include "frameloader.h"

#include "gallery.h"
#include "vision/framesource.h"

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
    void read(int frame)
    {
        QImage image;
        if (m_source) {
            vision::Frame f;
            if (m_source->seek(frame) && m_source->read(f))
                image = Gallery::toImage(f.image);
        }
        Q_EMIT ready(frame, image);
    }

Q_SIGNALS:
    void info(int frames, double fps, QSize size);
    void failed(const QString &message);
    void ready(int frame, const QImage &image);

private:
    std::unique_ptr<vision::FrameSource> m_source;
};

FrameLoader::FrameLoader(QObject *parent) : QObject(parent)
{
    m_reader = new FrameReader;
    m_reader->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_reader, &QObject::deleteLater);
    connect(m_reader, &FrameReader::info, this, &FrameLoader::sourceInfo);
    connect(m_reader, &FrameReader::failed, this, &FrameLoader::failed);
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
    QMetaObject::invokeMethod(m_reader, [r = m_reader, spec] { r->open(spec); },
                              Qt::QueuedConnection);
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
    QMetaObject::invokeMethod(m_reader, [r = m_reader, frame] { r->read(frame); },
                              Qt::QueuedConnection);
}

} // namespace edgetrain::ui

#include "frameloader.moc"
