#include "verifiedscoring.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <set>

namespace edgetrain::app {

namespace {

constexpr const char *kFormat = "edgetrain-verified-detections-1";

QJsonArray boxesJson(const std::vector<vision::ScoredBox> &boxes)
{
    QJsonArray a;
    for (const vision::ScoredBox &b : boxes)
        a.append(QJsonArray{b.box.x, b.box.y, b.box.width, b.box.height, double(b.score)});
    return a;
}

QString detectorWords(const std::string &name)
{
    if (name == "teacher")
        return QStringLiteral("the teacher");
    return QString::fromStdString(name);
}

} // namespace

QString percentWithRange(double fraction, const vision::Interval *ci)
{
    const QString whole = QString::number(qRound(100 * fraction)) + QStringLiteral(" %");
    if (!ci)
        return whole;
    return QStringLiteral("%1 (%2–%3 %)")
        .arg(whole)
        .arg(qRound(100 * ci->lo))
        .arg(qRound(100 * ci->hi));
}

QString signedDifference(double v)
{
    if (std::abs(v) < 0.005) // no "−0.00"
        v = 0.0;
    return (v < 0 ? QStringLiteral("−") : QStringLiteral("+")) +
           QString::number(std::abs(v), 'f', 2);
}

const VerifiedDetections::Detector *VerifiedDetections::detector(const std::string &name) const
{
    for (const Detector &d : detectors)
        if (d.name == name)
            return &d;
    return nullptr;
}

bool VerifiedDetections::save(const QString &sessionDir, QString *error) const
{
    QJsonArray list;
    for (const Detector &d : detectors) {
        QJsonArray byFrame;
        for (const auto &[frame, boxes] : d.frames)
            byFrame.append(QJsonObject{{QStringLiteral("frame"), frame},
                                       {QStringLiteral("boxes"), boxesJson(boxes)}});
        list.append(QJsonObject{{QStringLiteral("name"), QString::fromStdString(d.name)},
                                {QStringLiteral("threshold"), double(d.threshold)},
                                {QStringLiteral("frames"), byFrame}});
    }
    QJsonArray ran;
    for (int f : frames)
        ran.append(f);
    const QJsonObject json{{QStringLiteral("format"), QLatin1String(kFormat)},
                           {QStringLiteral("round"), round},
                           {QStringLiteral("first_frame"), first_frame},
                           {QStringLiteral("frames"), ran},
                           {QStringLiteral("detectors"), list}};
    return writeFileAtomically(QDir(sessionDir).filePath(QLatin1String(kFile)),
                               QJsonDocument(json).toJson(QJsonDocument::Compact), error);
}

std::optional<VerifiedDetections> VerifiedDetections::load(const QString &sessionDir,
                                                           QString *error)
{
    const QString path = QDir(sessionDir).filePath(QLatin1String(kFile));
    QFile file(path);
    if (!file.exists())
        return std::nullopt;
    auto fail = [&](const QString &what) {
        *error = QStringLiteral("%1: %2").arg(path, what);
        return std::nullopt;
    };
    if (!file.open(QIODevice::ReadOnly))
        return fail(file.errorString());
    QJsonParseError parse;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parse);
    if (!doc.isObject())
        return fail(parse.errorString());
    const QJsonObject o = doc.object();
    if (o.value(QStringLiteral("format")).toString() != QLatin1String(kFormat))
        return fail(QStringLiteral("not an EdgeTrain detections file (format %1)").arg(kFormat));
    VerifiedDetections d;
    d.round = o.value(QStringLiteral("round")).toInt(1);
    d.first_frame = o.value(QStringLiteral("first_frame")).toInt(0);
    for (const QJsonValue &f : o.value(QStringLiteral("frames")).toArray())
        d.frames.push_back(f.toInt(-1));
    std::sort(d.frames.begin(), d.frames.end());
    const QJsonArray detectors = o.value(QStringLiteral("detectors")).toArray();
    for (qsizetype i = 0; i < detectors.size(); ++i) {
        const QJsonObject dj = detectors[i].toObject();
        Detector det;
        det.name = dj.value(QStringLiteral("name")).toString().toStdString();
        det.threshold = float(dj.value(QStringLiteral("threshold")).toDouble());
        for (const QJsonValue &fv : dj.value(QStringLiteral("frames")).toArray()) {
            const QJsonObject fj = fv.toObject();
            std::vector<vision::ScoredBox> &boxes =
                det.frames[fj.value(QStringLiteral("frame")).toInt(-1)];
            for (const QJsonValue &bv : fj.value(QStringLiteral("boxes")).toArray()) {
                const QJsonArray b = bv.toArray();
                if (b.size() != 5)
                    return fail(
                        QStringLiteral("detectors[%1]: a box is [x, y, w, h, score]").arg(i));
                boxes.push_back(
                    {cv::Rect2d(b[0].toDouble(), b[1].toDouble(), b[2].toDouble(), b[3].toDouble()),
                     float(b[4].toDouble())});
            }
        }
        if (det.name.empty())
            return fail(QStringLiteral("detectors[%1]: no name").arg(i));
        d.detectors.push_back(std::move(det));
    }
    if (d.round < 1 || d.first_frame < 0 || (!d.frames.empty() && d.frames.front() < 0))
        return fail(QStringLiteral("round, first_frame or a frame out of range"));
    return d;
}

vision::BootstrapOptions verifiedBootstrap()
{
    return vision::BootstrapOptions(); // 2000 resamples, 95 %, its fixed seed
}

std::optional<vision::OperatingPoint> verifiedOperatingPoint(const vision::GroundTruth &truth,
                                                             const vision::FrameDetections &student,
                                                             int firstHeldOut, double iou)
{
    if (firstHeldOut <= 0) // no frame was held out: the same frames would choose and judge
        return std::nullopt;
    int frames = 0, boxes = 0;
    for (const vision::TruthFrame &f : truth.frames)
        if (f.done && f.index < firstHeldOut) {
            ++frames;
            boxes += int(std::count_if(f.boxes.begin(), f.boxes.end(),
                                       [](const vision::TruthBox &b) { return !b.ignore; }));
        }
    if (frames < kMinThresholdFrames || boxes < kMinThresholdBoxes)
        return std::nullopt;
    vision::MetricsOptions m;
    m.iou = iou;
    m.threshold = 0.0f; // the whole curve
    m.last_frame = firstHeldOut - 1;
    const vision::DetectorScore score =
        vision::DetectionMetrics::evaluate("student", student, truth, m);
    vision::OperatingPoint point = vision::OperatingPointCalibration::bestF1(score);
    point.frames = frames;
    point.boxes = boxes;
    return point;
}

IntervalScores scoreWithIntervals(const vision::GroundTruth &truth,
                                  const std::vector<VerifiedDetections::Detector> &detectors,
                                  int first, int last, double iou)
{
    IntervalScores out;
    vision::MetricsOptions m;
    m.iou = iou;
    m.first_frame = first;
    m.last_frame = last;
    std::vector<vision::BootstrapDetector> boot;
    int student = -1;
    for (const VerifiedDetections::Detector &d : detectors) {
        m.threshold = d.threshold;
        out.scores.push_back(vision::DetectionMetrics::evaluate(d.name, d.frames, truth, m));
        boot.push_back(
            {d.name, d.threshold, vision::DetectionMetrics::frameMatches(d.frames, truth, m)});
        if (d.name.rfind("student", 0) == 0) // the last round's, where there are several
            student = int(boot.size()) - 1;
    }
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; student >= 0 && i < int(boot.size()); ++i)
        if (i != student && boot[std::size_t(i)].name.rfind("student", 0) != 0)
            pairs.emplace_back(student, i);
    out.bootstrap = vision::Bootstrap::run(boot, pairs, verifiedBootstrap());
    return out;
}

HeadlineFrames headlineFrames(const vision::GroundTruth &truth, int first, int last)
{
    HeadlineFrames out;
    out.truth = truth;
    std::erase_if(out.truth.frames, [&](const vision::TruthFrame &f) {
        return !f.done || f.index < first || f.index > last;
    });
    const auto fromDisagreement = [](const vision::TruthFrame &f) {
        return f.pick == "disagreement";
    };
    const std::size_t total = out.truth.frames.size();
    const int disagreement =
        int(std::count_if(out.truth.frames.begin(), out.truth.frames.end(), fromDisagreement));
    if (disagreement > 0 && std::size_t(disagreement) < total) {
        std::erase_if(out.truth.frames, fromDisagreement);
        out.disagreement_frames = disagreement;
    }
    out.biased = disagreement > 0 && std::size_t(disagreement) == total;
    return out;
}

bool leadSettled(int frames, const vision::BootstrapDifference &lead)
{
    return frames >= kMinFramesToCompare && lead.ci.f1.clearOfZero();
}

VerifiedRound scoreVerified(const vision::GroundTruth &truth, const VerifiedDetections &detections)
{
    VerifiedRound round;
    round.round = detections.round;
    round.first_frame = detections.first_frame;
    const std::set<int> ran(detections.frames.begin(), detections.frames.end());
    vision::GroundTruth run = truth;
    std::erase_if(run.frames, [&](const vision::TruthFrame &f) { return !ran.count(f.index); });
    HeadlineFrames scored = headlineFrames(run, detections.first_frame);
    round.disagreement_frames = scored.disagreement_frames;
    round.biased = scored.biased;
    IntervalScores s =
        scoreWithIntervals(scored.truth, detections.detectors, detections.first_frame);
    round.scores = std::move(s.scores);
    round.frames = int(scored.truth.frames.size());
    round.intervals = std::move(s.bootstrap.intervals);
    round.differences = std::move(s.bootstrap.differences);
    round.resamples = s.bootstrap.resamples;
    round.seed = s.bootstrap.seed;
    return round;
}

int pendingVerifiedFrames(const vision::GroundTruth &truth, const VerifiedDetections &detections)
{
    const std::set<int> ran(detections.frames.begin(), detections.frames.end());
    return int(
        std::count_if(truth.frames.begin(), truth.frames.end(), [&](const vision::TruthFrame &f) {
            return f.done && f.index >= detections.first_frame && !ran.count(f.index);
        }));
}

VerifiedEnough verifiedEnough(const VerifiedRound &round, int pendingFrames, const QString &objects)
{
    VerifiedEnough e;
    e.pending = pendingFrames;
    const vision::DetectorScore *student = round.score("student");
    const vision::FigureIntervals *ci = round.interval("student");
    if (!student || !ci)
        return e;
    e.headline =
        QStringLiteral("On %1 verified frame%2%6 the student finds %3 of the %4 at %5 precision")
            .arg(round.frames)
            .arg(round.frames == 1 ? QString() : QStringLiteral("s"))
            .arg(percentWithRange(student->recall, &ci->recall), objects,
                 percentWithRange(student->precision, &ci->precision),
                 round.disagreement_frames > 0
                     ? QStringLiteral(" (%1 from the disagreement pick left out)")
                           .arg(round.disagreement_frames)
                     : QString());
    e.settled = !round.differences.empty();
    for (const vision::BootstrapDifference &d : round.differences) {
        const QString other = detectorWords(d.b);
        const double delta = d.a_minus_b.f1;
        if (round.frames < kMinFramesToCompare) {
            e.settled = false;
            const int more = kMinFramesToCompare - round.frames;
            e.comparisons.append(QStringLiteral("Student and %1: verify at least %2 more frame%3 "
                                                "before comparing them (F1 %4 so far).")
                                     .arg(other)
                                     .arg(more)
                                     .arg(more == 1 ? QString() : QStringLiteral("s"))
                                     .arg(signedDifference(delta)));
            continue;
        }
        if (leadSettled(round.frames, d)) {
            e.comparisons.append(QStringLiteral("Student and %1: told apart — F1 %2 (%3 to %4).")
                                     .arg(other, signedDifference(delta),
                                          signedDifference(d.ci.f1.lo),
                                          signedDifference(d.ci.f1.hi)));
            continue;
        }
        e.settled = false;
        // Both the same on every frame so far (e.g. both find everyone on the first easy frames):
        // nothing says yet whether they differ.
        if (std::abs(delta) < 0.005 && d.ci.f1.hi - d.ci.f1.lo < 1e-9) {
            e.comparisons.append(QStringLiteral("Student and %1: no difference so far (F1 %2, "
                                                "%3 to %4) — verify more frames.")
                                     .arg(other, signedDifference(delta),
                                          signedDifference(d.ci.f1.lo),
                                          signedDifference(d.ci.f1.hi)));
            continue;
        }
        const std::optional<int> more =
            vision::Bootstrap::framesToSettle(round.frames, delta, d.ci.f1);
        e.comparisons.append(
            more ? QStringLiteral("Student and %1: not yet told apart (F1 %2, %3 to %4) — verify "
                                  "about %5 more frame%6 to tell them apart.")
                       .arg(other, signedDifference(delta), signedDifference(d.ci.f1.lo),
                            signedDifference(d.ci.f1.hi))
                       .arg(*more)
                       .arg(*more == 1 ? QString() : QStringLiteral("s"))
                 : QStringLiteral("Student and %1: too close to tell apart (F1 %2, %3 to %4); "
                                  "more verified frames would hardly change that.")
                       .arg(other, signedDifference(delta), signedDifference(d.ci.f1.lo),
                            signedDifference(d.ci.f1.hi)));
    }
    return e;
}

} // namespace edgetrain::app
