#pragma once

#include <QColor>
#include <QString>
#include <Qt>

namespace edgetrain::app::palette {

// One palette for the window and the reports: Okabe and Ito's eight colours, which people with
// any of the common colour-vision deficiencies can still tell apart. Every role also has a second
// cue (a line style), so nothing depends on colour alone.

inline const QColor kBlack{0x00, 0x00, 0x00};
inline const QColor kOrange{0xe6, 0x9f, 0x00};
inline const QColor kSkyBlue{0x56, 0xb4, 0xe9};
inline const QColor kBluishGreen{0x00, 0x9e, 0x73};
inline const QColor kYellow{0xf0, 0xe4, 0x42};
inline const QColor kBlue{0x00, 0x72, 0xb2};
inline const QColor kVermillion{0xd5, 0x5e, 0x00};
inline const QColor kReddishPurple{0xcc, 0x79, 0xa7};

/** Who drew a box or a curve: the same colour, line style and name everywhere. */
enum class Source { Teacher, Motion, Tracker, Student, Truth, Ignore };

/** The colour of `source` on a light background (charts, the PDF's pages). */
inline QColor onLight(Source source)
{
    switch (source) {
    case Source::Teacher:
        return kOrange;
    case Source::Motion:
        return kSkyBlue;
    case Source::Tracker:
        return kReddishPurple;
    case Source::Student:
        return kBluishGreen;
    case Source::Truth:
        return kBlack;
    case Source::Ignore:
        break;
    }
    return QColor(0x76, 0x76, 0x76);
}

/** The colour of `source` drawn over a video frame: bright enough on dark and on busy pictures
 *  (the student's bluish green a little lighter, the truth yellow instead of black). */
inline QColor onFrame(Source source)
{
    switch (source) {
    case Source::Student:
        return QColor(0x2e, 0xe0, 0xa8);
    case Source::Truth:
        return kYellow;
    case Source::Ignore:
        return QColor(0xc8, 0xc8, 0xc8);
    default:
        return onLight(source);
    }
}

/** The second cue beside colour: teacher dashed, motion dotted, tracker dash-dot, student and
 *  truth solid (the truth is drawn thinner), ignore regions dashed grey. */
inline Qt::PenStyle lineStyle(Source source)
{
    switch (source) {
    case Source::Teacher:
    case Source::Ignore:
        return Qt::DashLine;
    case Source::Motion:
        return Qt::DotLine;
    case Source::Tracker:
        return Qt::DashDotLine;
    case Source::Student:
    case Source::Truth:
        break;
    }
    return Qt::SolidLine;
}

/** The word the window and the report use for `source`. */
inline QString name(Source source)
{
    switch (source) {
    case Source::Teacher:
        return QStringLiteral("teacher");
    case Source::Motion:
        return QStringLiteral("motion");
    case Source::Tracker:
        return QStringLiteral("tracker");
    case Source::Student:
        return QStringLiteral("student");
    case Source::Truth:
        return QStringLiteral("verified");
    case Source::Ignore:
        break;
    }
    return QStringLiteral("ignore");
}

/** The source a detector's name in a session ("teacher", "student", "student r2", …) stands
 *  for; anything else is drawn as `Ignore` (grey). */
inline Source sourceOf(const QString &detector)
{
    if (detector.startsWith(QLatin1String("student")))
        return Source::Student;
    if (detector == QLatin1String("teacher"))
        return Source::Teacher;
    if (detector == QLatin1String("motion"))
        return Source::Motion;
    if (detector == QLatin1String("tracker"))
        return Source::Tracker;
    if (detector == QLatin1String("truth") || detector == QLatin1String("verified"))
        return Source::Truth;
    return Source::Ignore;
}

/** The colour of the i-th device (or series) on a light background, in an order where
 *  neighbours differ in lightness too; with more than seven the colours repeat and the caller's
 *  line style (seriesStyle) tells them apart. */
inline QColor series(int i)
{
    static const QColor colours[] = {kBlue,    kOrange,        kBluishGreen, kVermillion,
                                     kSkyBlue, kReddishPurple, kBlack};
    constexpr int n = int(sizeof colours / sizeof colours[0]);
    return colours[((i % n) + n) % n];
}

/** The line style of the i-th series: solid for the first seven, then dash-dot-dot, then
 *  dash-dot (dashed and dotted already mean "sent" and "dropped out" in the device charts). */
inline Qt::PenStyle seriesStyle(int i)
{
    static const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashDotDotLine, Qt::DashDotLine};
    return styles[(i / 7) % 3];
}

// Text on white, every one at least 4.5:1 (WCAG AA for body text).
inline const QColor kText{0x20, 0x20, 0x20};      // 16.3:1
inline const QColor kMutedText{0x59, 0x59, 0x59}; // 7.0:1, subtitles and captions
inline const QColor kHeading{0x12, 0x3a, 0x63};   // 11.6:1
inline const QColor kError{0xb0, 0x00, 0x20};     // 7.3:1
inline const QColor kGood{0x1b, 0x6e, 0x35};      // 6.3:1
inline const QColor kWarning{0x8a, 0x4b, 0x00};   // 6.8:1

/** The WCAG 2 contrast ratio of two colours, 1 to 21. */
double contrast(const QColor &a, const QColor &b);

} // namespace edgetrain::app::palette
