#include "gallery.h"

#include "vision/framesource.h"

#include <QPainter>

#include <opencv2/imgproc.hpp>

namespace edgetrain::ui {

QImage Gallery::toImage(const cv::Mat &bgr)
{
    cv::Mat rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    return QImage(rgb.data, rgb.cols, rgb.rows, int(rgb.step), QImage::Format_RGB888).copy();
}

QList<QImage> Gallery::renderGains(const app::Session &session, const vision::LabelResult &labels,
                                   int max, int height)
{
    QList<QImage> images;
    const auto &gains = session.evaluation.result.gains;
    if (gains.empty() || max <= 0)
        return images;
    auto source = vision::FrameSource::open(labels.source);
    const int n = std::min<int>(max, int(gains.size()));
    for (int i = 0; i < n; ++i) {
        const vision::ViewpointGain &g = gains[std::size_t(i) * gains.size() / std::size_t(n)];
        vision::Frame frame;
        if (!source->seek(g.frame) || !source->read(frame))
            continue;
        // The person with some surroundings, at a common height.
        const cv::Rect2d both = g.box | g.student;
        const double pad = 0.6 * both.height;
        cv::Rect area(int(both.x - pad / 2), int(both.y - pad / 4), int(both.width + pad),
                      int(both.height + pad / 2));
        area &= cv::Rect(0, 0, frame.image.cols, frame.image.rows);
        if (area.empty())
            continue;
        QImage img = toImage(frame.image(area));
        const double scale = double(height) / area.height;
        img = img.scaledToHeight(height, Qt::SmoothTransformation)
                  .convertToFormat(QImage::Format_RGB32);
        QPainter p(&img);
        p.setRenderHint(QPainter::Antialiasing);
        auto rect = [&](const cv::Rect2d &r) {
            return QRectF((r.x - area.x) * scale, (r.y - area.y) * scale, r.width * scale,
                          r.height * scale);
        };
        p.setPen(QPen(QColor(255, 160, 0), 2, Qt::DashLine));
        p.drawRect(rect(g.box));
        p.setPen(QPen(QColor(40, 220, 90), 2));
        p.drawRect(rect(g.student));
        p.fillRect(QRectF(0, 0, img.width(), 18), QColor(0, 0, 0, 150));
        p.setPen(Qt::white);
        QFont f = p.font();
        f.setPixelSize(12);
        p.setFont(f);
        p.drawText(QRectF(4, 0, img.width() - 8, 18), Qt::AlignVCenter,
                   QStringLiteral("frame %1").arg(g.frame));
        images.append(img);
    }
    return images;
}

} // namespace edgetrain::ui
