#pragma once
// For the report's suites: what a PDF they wrote says and shows, through poppler's tools
// (pdftotext, pdftoppm): its text, a page as a picture and how far down
// it is drawn; and a training record that stopped early.

#include "app/session/session.h"

#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QString>

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

} // namespace edgetrain::tests
