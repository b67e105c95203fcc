#pragma once
// For the report's suites: what a PDF they wrote says and shows, through poppler's tools
// (pdftotext, pdftoppm): its text, a page as a picture and how far down it is drawn; and the
// sessions' records they are made from (verified rounds, an evaluation against the tracker's
// labels, a training run that stopped early).

#include "app/session/session.h"

#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QString>

#include <cmath>

namespace edgetrain::tests {

/** `page`'s text laid out (pdftotext -layout), whitespace simplified; "" if it cannot be read. */
inline QString pdfText(const QString &pdf, int page)
{
    QProcess p;
    p.start(QStringLiteral("pdftotext"),
            {QStringLiteral("-f"), QString::number(page), QStringLiteral("-l"),
             QString::number(page), QStringLiteral("-layout"), pdf, QStringLiteral("-")});
    if (!p.waitForFinished(20000) || p.exitCode() != 0)
        return QString();
    // pdftotext writes the fonts' ligatures as they are: "veriﬁed".
    return QString::fromUtf8(p.readAllStandardOutput())
        .replace(QChar(0xfb01), QStringLiteral("fi"))
        .replace(QChar(0xfb02), QStringLiteral("fl"))
        .simplified();
}

/** `page` of `pdf` rendered at 30 dpi (pdftoppm) to `base`.png. */
inline QImage renderPage(const QString &pdf, int page, const QString &base)
{
    QProcess ppm;
    ppm.start(QStringLiteral("pdftoppm"),
              {QStringLiteral("-f"), QString::number(page), QStringLiteral("-l"),
               QString::number(page), QStringLiteral("-png"), QStringLiteral("-r"),
               QStringLiteral("30"), QStringLiteral("-singlefile"), pdf, base});
    if (!ppm.waitForFinished(60000) || ppm.exitCode() != 0)
        return QImage();
    return QImage(base + QStringLiteral(".png"));
}

/** How far down the page (above the foot line) something is drawn, as a fraction of it. */
inline double inkedFraction(const QImage &page)
{
    const int body = page.height() * 9 / 10; // the foot line is below
    int last = 0;
    for (int y = 0; y < body; ++y)
        for (int x = 0; x < page.width(); ++x)
            if (qGray(page.pixel(x, y)) < 235) {
                last = y;
                break;
            }
    return double(last) / body;
}

/** A finished run of 25 epochs of at most 40 on three devices, keeping epoch 15. */
inline void stoppedEarly(app::Session &s)
{
    s.plan.epochs = 40;
    s.training.state = app::TrainingRecord::State::Finished;
    s.training.nodes = QStringList{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")};
    s.training.seconds = 297;
    for (int e = 1; e <= 25; ++e) {
        net::ClusterEpoch epoch;
        epoch.epoch = e;
        epoch.nodes = 3;
        s.training.epochs.push_back(epoch);
    }
    s.training.keptEpoch = 15;
}

inline vision::DetectorScore score(const std::string &name, double recall, double precision,
                                   int truths, std::vector<vision::PrPoint> curve)
{
    vision::DetectorScore s;
    s.name = name;
    s.frames = 13;
    s.truths = truths;
    s.true_positives = int(std::lround(recall * truths));
    s.detections = int(std::lround(s.true_positives / precision));
    s.false_positives = s.detections - s.true_positives;
    s.recall = recall;
    s.precision = precision;
    s.f1 = 2 * recall * precision / (recall + precision);
    s.ap50 = recall * precision;
    s.ap50_95 = 0.5 * s.ap50;
    s.threshold = name == "student" ? 0.3f : 0.0f;
    s.curve = std::move(curve);
    return s;
}

/** Two self-training rounds on 13 verified frames from frame 480 on; the current round's
 *  student finds 87 % at 93 %, the teacher 41 % at 80 %, motion 90 % at 95 %. */
inline std::vector<app::VerifiedRound> verifiedRounds()
{
    app::VerifiedRound r1;
    r1.round = 1;
    r1.frames = 13;
    r1.first_frame = 480;
    r1.scores = {score("teacher", 0.41, 0.80, 82, {{0.2, 0.9f, 2.0f}, {0.41, 0.80, 0.0f}}),
                 score("motion", 0.90, 0.95, 82, {{0.5, 1.0, 1.0f}, {0.90, 0.95, 0.0f}}),
                 score("student", 0.70, 0.88, 82, {{0.3, 0.97, 0.8f}, {0.70, 0.88, 0.3f}})};
    app::VerifiedRound r2 = r1;
    r2.round = 2;
    r2.scores[2] =
        score("student", 0.87, 0.93, 82,
              {{0.1, 1.0, 0.9f}, {0.5, 0.96, 0.6f}, {0.87, 0.93, 0.3f}, {0.92, 0.71, 0.1f}});
    return {r1, r2};
}

/** An evaluation against the tracker's labels, as the app records it. */
inline void trackerEvaluation(app::Session &s)
{
    s.evaluation.done = true;
    auto &e = s.evaluation.result;
    e.frames = 40;
    e.teacher_found_boxes = 120;
    e.tracker_only_boxes = 310;
    e.teacher_recall_teacher_found = 1.0;
    e.student_recall_teacher_found = 0.87;
    e.teacher_recall_tracker_only = 0.0;
    e.student_recall_tracker_only = 0.44;
    e.teacher_precision = 0.99;
    e.student_precision = 0.48;
    e.teacher_detections = 121;
    e.student_detections = 512;
}

} // namespace edgetrain::tests
