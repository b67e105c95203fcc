#include "gallery.h"

#include "boxstyle.h"
#include "vision/boxguard.h"
#include "vision/detectionrun.h"
#include "vision/framesource.h"
#include "vision/studentteacher.h"

#include <QFileInfo>
#include <QPainter>
#include <opencv2/imgproc.hpp>

#include <set>

namespace edgetrain::ui {

QImage Gallery::toImage(const cv::Mat &bgr)
{
    cv::Mat rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    return QImage(rgb.data, rgb.cols, rgb.rows, int(rgb.step), QImage::Format_RGB888).copy();
}

QImage Gallery::renderSample(const QString &folder, const vision::FrameSample &sample, bool copy,
                             int height)
{
    QImage img(folder + QLatin1Char('/') + QString::fromStdString(sample.file));
    if (img.isNull() || img.height() <= 0)
        return {};
    const double scale = double(height) / img.height();
    img =
        img.scaledToHeight(height, Qt::SmoothTransformation).convertToFormat(QImage::Format_RGB32);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    int objects = 0, ignores = 0;
    for (const core::LabelBox &b : sample.boxes) {
        const QRectF r(b.x0 * scale, b.y0 * scale, (b.x1 - b.x0) * scale, (b.y1 - b.y0) * scale);
        if (b.ignore) {
            p.setPen(BoxStyle::pen(app::palette::Source::Ignore, 1.5));
            p.setBrush(BoxStyle::ignoreBrush());
            ++ignores;
        } else {
            p.setPen(BoxStyle::pen(app::palette::Source::Tracker, 2.0));
            p.setBrush(Qt::NoBrush);
            ++objects;
        }
        p.drawRect(r);
    }
    const QString what =
        sample.frame < 0 ? QStringLiteral("background")
        : sample.pasted > 0
            ? QStringLiteral("frame %1, %2 pasted").arg(sample.frame).arg(sample.pasted)
        : copy ? QStringLiteral("frame %1, jittered").arg(sample.frame)
               : QStringLiteral("frame %1").arg(sample.frame);
    QStringList counts{what};
    if (objects > 0)
        counts.append(objects == 1 ? QStringLiteral("1 object")
                                   : QStringLiteral("%1 objects").arg(objects));
    if (ignores > 0)
        counts.append(ignores == 1 ? QStringLiteral("1 ignore region")
                                   : QStringLiteral("%1 ignore regions").arg(ignores));
    QFont f = p.font();
    f.setPixelSize(11);
    p.setFont(f);
    p.fillRect(QRectF(0, 0, img.width(), 16), QColor(0, 0, 0, 160));
    p.setPen(Qt::white);
    p.drawText(QRectF(3, 0, img.width() - 6, 16), Qt::AlignVCenter,
               p.fontMetrics().elidedText(counts.join(QStringLiteral(" · ")), Qt::ElideRight,
                                          img.width() - 6));
    return img;
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
        const vision::GuardedBox tile = vision::BoxGuard::check(
            {both.x - pad / 2, both.y - pad / 4, both.width + pad, both.height + pad / 2},
            frame.image.size(), 2.0);
        if (!tile.ok())
            continue;
        const cv::Rect area = tile.pixels;
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
        // The labelled box (the tracker followed the person the teacher missed), the student's.
        p.setPen(BoxStyle::pen(app::palette::Source::Tracker));
        p.drawRect(rect(g.box));
        p.setPen(BoxStyle::pen(app::palette::Source::Student));
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

QList<QImage> Gallery::renderVerified(const app::Session &session, const vision::GroundTruth &truth,
                                      int first_frame,
                                      const std::vector<vision::DetectorScore> &scores, int max,
                                      int height)
{
    QList<QImage> images;
    std::vector<int> candidates;
    for (const vision::TruthFrame &f : truth.frames)
        if (f.done && f.index >= first_frame)
            candidates.push_back(f.index);
    if (candidates.empty() || max <= 0)
        return images;
    std::set<int> chosen;
    const int n = std::min<int>(max, int(candidates.size()));
    for (int i = 0; i < n; ++i)
        chosen.insert(candidates[std::size_t(i) * candidates.size() / std::size_t(n)]);

    // The detectors as the evaluation ran them: name, detector.
    std::vector<std::pair<QString, std::unique_ptr<vision::Teacher>>> detectors;
    detectors.emplace_back(QStringLiteral("teacher"),
                           vision::Teacher::create(session.capture.teacher.toStdString()));
    const std::string dir = session.dir.toStdString();
    if (QFileInfo::exists(QString::fromStdString(vision::StudentTeacher::weightsPath(dir))))
        detectors.emplace_back(QStringLiteral("student"), vision::StudentTeacher::fromSession(dir));
    std::vector<vision::Teacher *> run;
    for (auto &[name, d] : detectors)
        run.push_back(d.get());
    auto source = vision::FrameSource::open(
        truth.source.empty() ? session.capture.source.toStdString() : truth.source);
    const vision::DetectionRunResult found = vision::DetectionRun::run(*source, run, chosen);

    std::vector<std::pair<std::string, vision::FrameDetections>> kept; // at the operating threshold
    for (std::size_t d = 0; d < detectors.size(); ++d) {
        const std::string name = detectors[d].first.toStdString();
        float threshold = detectors[d].second->threshold;
        for (const vision::DetectorScore &s : scores)
            if (s.name == name)
                threshold = s.threshold;
        vision::FrameDetections boxes;
        for (const auto &[frame, list] : found.detections[d])
            for (const vision::ScoredBox &b : list)
                if (b.score >= threshold)
                    boxes[frame].push_back(b);
        kept.emplace_back(name, std::move(boxes));
    }

    for (const int index : chosen) {
        vision::Frame frame;
        if (!source->seek(index) || !source->read(frame))
            continue;
        QImage img = toImage(frame.image)
                         .scaledToHeight(height, Qt::SmoothTransformation)
                         .convertToFormat(QImage::Format_RGB32);
        const double scale = double(height) / frame.image.rows;
        auto rect = [&](const cv::Rect2d &r) {
            return QRectF(r.x * scale, r.y * scale, r.width * scale, r.height * scale);
        };
        const vision::TruthFrame *tf = truth.frame(index);
        vision::GroundTruth one;
        one.frames.push_back(*tf);
        int toFind = 0;
        for (const vision::TruthBox &b : tf->boxes)
            toFind += b.ignore ? 0 : 1;

        QPainter p(&img);
        p.setRenderHint(QPainter::Antialiasing);
        QList<BoxStyle::Key> counts;
        for (const auto &[name, boxes] : kept) {
            const QString qname = QString::fromStdString(name);
            const app::palette::Source who = app::palette::sourceOf(qname);
            p.setPen(BoxStyle::pen(who, 1.8));
            const auto it = boxes.find(index);
            if (it != boxes.end())
                for (const vision::ScoredBox &b : it->second)
                    p.drawRect(rect(b.box));
            vision::MetricsOptions options;
            options.iou = 0.5;
            options.threshold = 0.0f;
            const vision::DetectorScore s =
                vision::DetectionMetrics::evaluate(name, boxes, one, options);
            counts.append({who, QStringLiteral("%1 %2 found, %3 false")
                                    .arg(app::palette::name(who))
                                    .arg(s.true_positives)
                                    .arg(s.false_positives)});
        }
        // The truth last: on top of the detections that match it.
        for (const vision::TruthBox &b : tf->boxes) {
            p.setPen(b.ignore ? BoxStyle::pen(app::palette::Source::Ignore, 1.5)
                              : BoxStyle::pen(app::palette::Source::Truth, 2.5));
            p.drawRect(rect(b.box));
        }
        // Two lines on top: the frame and what is to be found; what each detector found, each
        // beside its line style.
        p.fillRect(QRectF(0, 0, img.width(), 17), QColor(0, 0, 0, 160));
        p.setPen(Qt::white);
        QFont f = p.font();
        f.setPixelSize(12);
        p.setFont(f);
        p.drawText(QRectF(4, 1, img.width() - 8, 16), Qt::AlignVCenter,
                   QStringLiteral("frame %1 · %2 to find%3")
                       .arg(index)
                       .arg(toFind)
                       .arg(tf->pick == "disagreement" ? QStringLiteral(" · disagreement pick")
                            : tf->pick == "spread"     ? QStringLiteral(" · spread pick")
                                                       : QString()));
        // The verified boxes named too where the tile has room for it.
        const BoxStyle::Key truthKey{app::palette::Source::Truth, {}};
        if (BoxStyle::legendWidth(p.font(), counts + QList<BoxStyle::Key>{truthKey}) <= img.width())
            counts.append(truthKey);
        BoxStyle::drawLegend(p, QPointF(0, 17), counts);
        images.append(img);
    }
    return images;
}

} // namespace edgetrain::ui
