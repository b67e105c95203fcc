#include "reporttext.h"

#include "app/report/palette.h"
#include "app/report/wording.h"
#include "app/session/verifiedscoring.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace edgetrain::ui {

namespace {

/** Student first, then the teacher, motion, and anything else in the record's order. */
std::vector<const vision::DetectorScore *> headlineOrder(const app::VerifiedRound &round)
{
    std::vector<const vision::DetectorScore *> order;
    for (const char *name : {"student", "teacher", "motion"})
        for (const vision::DetectorScore &s : round.scores)
            if (s.name == name)
                order.push_back(&s);
    for (const vision::DetectorScore &s : round.scores)
        if (std::find(order.begin(), order.end(), &s) == order.end())
            order.push_back(&s);
    return order;
}

QString wholePercent(double fraction)
{
    return QString::number(qRound(100 * fraction)) + QStringLiteral(" %");
}

/** A table's figure: "86.3 % (78–93 %)", its 95 % interval in brackets when known. */
QString cell(double fraction, const vision::Interval *ci)
{
    const QString v = ReportText::percent(fraction);
    return ci ? QStringLiteral("%1 (%2–%3 %)")
                    .arg(v)
                    .arg(qRound(100 * ci->lo))
                    .arg(qRound(100 * ci->hi))
              : v;
}

/** The student's lead over each baseline, whether the frames tell it from zero. */
QString leadSentences(const app::VerifiedRound &round)
{
    QString text;
    for (const vision::BootstrapDifference &d : round.differences) {
        const QString other = ReportText::detectorPhrase(d.b);
        const QString figures =
            QObject::tr("F1 %1, 95 % interval %2 to %3")
                .arg(app::signedDifference(d.a_minus_b.f1), app::signedDifference(d.ci.f1.lo),
                     app::signedDifference(d.ci.f1.hi));
        if (round.frames < app::kMinFramesToCompare)
            text += QObject::tr(" With so few verified frames the student and %1 cannot be "
                                "compared yet (%2).")
                        .arg(other, figures);
        else if (app::leadSettled(round.frames, d))
            text += d.a_minus_b.f1 > 0
                        ? QObject::tr(" The student's lead over %1 is clear of zero (%2).")
                              .arg(other, figures)
                        : QObject::tr(" The student trails %1, clear of zero (%2).")
                              .arg(other, figures);
        else
            text += QObject::tr(" Between the student and %1 these frames cannot tell (%2).")
                        .arg(other, figures);
    }
    return text;
}

QString number(double v, int decimals)
{
    return QString::number(v, 'f', decimals);
}

} // namespace

QString ReportText::objectsWord(const std::string &category)
{
    return category == "person" ? QObject::tr("people") : QObject::tr("objects");
}

const app::VerifiedRound *ReportText::currentRound(const app::Session &s)
{
    const auto &rounds = s.evaluation.verified;
    if (rounds.empty() || rounds.back().scores.empty())
        return nullptr;
    return &rounds.back();
}

QString ReportText::detectorPhrase(const std::string &name)
{
    if (name == "student")
        return QObject::tr("the student");
    if (name == "teacher")
        return QObject::tr("the teacher");
    if (name == "motion")
        return QObject::tr("motion");
    return QString::fromStdString(name);
}

QString ReportText::percent(double fraction, int decimals)
{
    return QString::number(100 * fraction, 'f', decimals) + QStringLiteral(" %");
}

double ReportText::framesPerSecond(const app::Session &s, const std::string &name)
{
    if (name == "student")
        return s.evaluation.student_fps;
    if (name == "teacher")
        return s.evaluation.teacher_fps;
    if (name == "motion")
        return s.evaluation.motion_fps;
    return 0.0;
}

QString ReportText::verifyInvitation()
{
    return QObject::tr("No frame is verified yet: these figures are measured against the tracker's "
                       "own labels, so the tracker's mistakes count as truth. Verify frames in "
                       "step 4 to measure recall and precision against boxes a person checked.");
}

QString ReportText::trackerHeadline(const app::Session &s)
{
    if (!s.evaluation.done)
        return QObject::tr("The student has not been evaluated in this session yet.");
    const auto &e = s.evaluation.result;
    return QObject::tr("Against the tracker's labels: on %1 held-out boxes only the tracker had "
                       "found%2, the student finds %3, the teacher %4.")
        .arg(e.tracker_only_boxes)
        .arg(s.capture.every == 1
                 ? QObject::tr(" (the teacher ran on every frame: exactly the ones it missed)")
                 : QObject::tr(" (the teacher ran on %1: some of these it never saw)")
                       .arg(everyNth(s.capture.every)))
        .arg(e.tracker_only_boxes > 0 ? percent(e.student_recall_tracker_only)
                                      : QStringLiteral("–"))
        .arg(e.tracker_only_boxes > 0 ? percent(e.teacher_recall_tracker_only)
                                      : QStringLiteral("–"));
}

QString ReportText::headline(const app::Session &s, const std::string &category)
{
    const app::VerifiedRound *round = currentRound(s);
    if (!round)
        return trackerHeadline(s) + QLatin1Char(' ') + verifyInvitation();
    const QString objects = objectsWord(category);
    QString where;
    if (round->first_frame > 0)
        where =
            s.capture.maxFrames > 0 && round->first_frame >= s.capture.maxFrames
                ? QObject::tr(" (from frame %1 on, never seen in training)").arg(round->first_frame)
                : QObject::tr(" (from frame %1 on)").arg(round->first_frame);
    QString text = QObject::tr("On %1%2").arg(
        count(round->frames, QObject::tr("verified frame"), QObject::tr("verified frames")), where);
    bool first = true;
    for (const vision::DetectorScore *d : headlineOrder(*round)) {
        const QString who = detectorPhrase(d->name);
        const vision::FigureIntervals *ci = round->interval(d->name);
        const QString recall = app::percentWithRange(d->recall, ci ? &ci->recall : nullptr);
        const QString precision =
            app::percentWithRange(d->precision, ci ? &ci->precision : nullptr);
        if (first) {
            text += d->detections > 0
                        ? QObject::tr(" %1 finds %2 of the %3 at %4 precision")
                              .arg(who, recall, objects, precision)
                        : QObject::tr(" %1 finds none of the %2 (no detection)").arg(who, objects);
        } else {
            text += d->detections > 0 ? QObject::tr("; %1 %2 at %3").arg(who, recall, precision)
                                      : QObject::tr("; %1 none (no detection)").arg(who);
        }
        first = false;
    }
    text += QLatin1Char('.') + leadSentences(*round);
    if (round->biased)
        text += QObject::tr(" Every one of these frames was picked where the detectors disagree: "
                            "the hardest frames, so every figure here understates the camera as a "
                            "whole; verify frames of the spread pick for the headline.");
    else if (round->disagreement_frames > 0)
        text += QObject::tr(" %1 picked where the detectors disagree %2 left out of these "
                            "figures, which the spread pick's frames give alone.")
                    .arg(count(round->disagreement_frames, QObject::tr("verified frame"),
                               QObject::tr("verified frames")))
                    .arg(round->disagreement_frames == 1 ? QObject::tr("is") : QObject::tr("are"));
    if (s.evaluation.verified.size() > 1)
        for (const vision::DetectorScore &d : s.evaluation.verified.front().scores)
            if (d.name == "student")
                text += QObject::tr(" Before self-training (round %1) the student found %2 at %3.")
                            .arg(s.evaluation.verified.front().round)
                            .arg(wholePercent(d.recall), wholePercent(d.precision));
    return text;
}

QList<QStringList> ReportText::verifiedRows(const app::Session &s)
{
    const auto &rounds = s.evaluation.verified;
    const bool several = rounds.size() > 1;
    QStringList header{QObject::tr("Detector"), QObject::tr("Recall"),  QObject::tr("Precision"),
                       QObject::tr("F1"),       QObject::tr("AP50"),    QObject::tr("AP@[.5:.95]"),
                       QObject::tr("TP / FP"),  QObject::tr("Frames/s")};
    if (several)
        header.prepend(QObject::tr("Round"));
    QList<QStringList> rows{header};
    if (!currentRound(s))
        return rows;
    for (std::size_t r = 0; r < rounds.size(); ++r) {
        const bool current = r + 1 == rounds.size();
        for (const vision::DetectorScore *d : headlineOrder(rounds[r])) {
            const double fps = current ? framesPerSecond(s, d->name) : 0.0;
            const vision::FigureIntervals *ci = rounds[r].interval(d->name);
            QStringList row{
                QString::fromStdString(d->name),
                d->truths > 0 ? cell(d->recall, ci ? &ci->recall : nullptr) : QStringLiteral("–"),
                d->detections > 0 ? cell(d->precision, ci ? &ci->precision : nullptr)
                                  : QStringLiteral("–"),
                number(d->f1, 3),
                number(d->ap50, 3),
                number(d->ap50_95, 3),
                QStringLiteral("%1 / %2").arg(d->true_positives).arg(d->false_positives),
                fps > 0 ? number(fps, fps >= 100 ? 0 : 1) : QStringLiteral("–")};
            if (several)
                row.prepend(QString::number(rounds[r].round));
            rows.append(row);
        }
    }
    return rows;
}

QString ReportText::verifiedMethod(const app::Session &s)
{
    const app::VerifiedRound *round = currentRound(s);
    if (!round)
        return QString();
    int truths = 0;
    for (const vision::DetectorScore &d : round->scores)
        truths = std::max(truths, d.truths);
    return QObject::tr("%1 verified by a person")
               .arg(count(round->frames, QObject::tr("frame"), QObject::tr("frames"))) +
           (round->first_frame > 0 ? QObject::tr(" from frame %1 on").arg(round->first_frame)
                                   : QString()) +
           QObject::tr(
               ", %1 to find. A detection is true when it overlaps a verified box "
               "by IoU ≥ 0.5 (greedy by score, as COCO); one on an ignore box counts "
               "neither way. AP50 averages precision over recall (101 points); AP@[.5:.95] "
               "also over IoU 0.5–0.95. Frames/s: each detector's speed in the same evaluation.")
               .arg(count(truths, QObject::tr("box"), QObject::tr("boxes"))) +
           (round->resamples > 0
                ? QObject::tr(
                      " Ranges are 95 % intervals from a bootstrap over the verified frames "
                      "(%1 resamples of the frames with replacement, seed %2; frames, not "
                      "boxes, are the unit, since the people in one frame are seen "
                      "together).")
                      .arg(round->resamples)
                      .arg(round->seed)
                : QString()) +
           operatingPoint(s);
}

QString ReportText::operatingPoint(const app::Session &s)
{
    const auto &p = s.evaluation.operatingPoint;
    if (!p)
        return QString();
    if (s.evaluation.operatingPointAgainst == QLatin1String("verified"))
        return QObject::tr(" The student reports boxes scoring ≥ %1: the best F1 (%2) against "
                           "%3 a person verified in the span it trained on (%4); the held-out "
                           "frames above played no part in it.")
            .arg(p->threshold, 0, 'f', 2)
            .arg(p->f1, 0, 'f', 2)
            .arg(count(p->frames, QObject::tr("frame"), QObject::tr("frames")))
            .arg(count(p->boxes, QObject::tr("box"), QObject::tr("boxes")));
    const app::VerifiedRound *round = currentRound(s);
    // Only a held-out span leaves training frames a person's truth could choose on.
    const QString hint =
        round && round->first_frame > 0
            ? QObject::tr(" (with %1 verified, holding %2, in the span it trained on, the next "
                          "evaluation chooses it on them)")
                  .arg(count(app::kMinThresholdFrames, QObject::tr("frame"), QObject::tr("frames")))
                  .arg(count(app::kMinThresholdBoxes, QObject::tr("box"), QObject::tr("boxes")))
            : QString();
    // The labels overstate the student's precision more than its recall: their best F0.5
    // (vision::OperatingPointCalibration) weighs precision more; older sessions took the F1.
    const QString measure = p->beta == 1.0
                                ? QObject::tr("the best F1 (%1)").arg(p->f1, 0, 'f', 2)
                                : QObject::tr("the best F%1 (%2), precision weighing more,")
                                      .arg(p->beta, 0, 'g', 2)
                                      .arg(p->f_beta, 0, 'f', 2);
    return QObject::tr(" The student reports boxes scoring ≥ %1: %2 against the "
                       "session's own labels on %3 it trained on, chosen before "
                       "and without the verified frames%4.")
        .arg(p->threshold, 0, 'f', 2)
        .arg(measure)
        .arg(count(p->frames, QObject::tr("frame"), QObject::tr("frames")))
        .arg(hint);
}

QList<QStringList> ReportText::energyRows(const app::Session &s)
{
    QList<QStringList> rows{{QObject::tr("Device"), QObject::tr("Power from"),
                             QObject::tr("Energy"), QObject::tr("Mean power"),
                             QObject::tr("Per epoch")}};
    struct Span
    {
        double t0 = -1, t1 = -1, e0 = 0, e1 = 0;
        bool measured = true;
    };
    std::map<QString, Span> devices;
    for (const app::MetricRow &m : s.training.metrics) {
        // With a plan, the devices it released did not train: not the run's energy.
        if (m.powerWatts < 0 || (s.training.plan && !s.training.nodes.contains(m.node)))
            continue;
        Span &d = devices[m.node];
        if (d.t0 < 0) {
            d.t0 = m.seconds;
            d.e0 = m.energyJoules;
        }
        d.t1 = m.seconds;
        d.e1 = m.energyJoules;
        d.measured = d.measured && m.powerMeasured;
    }
    const int epochs = int(s.training.epochs.size());
    for (const auto &[name, d] : devices) {
        const double joules = d.e1 - d.e0;
        rows.append({name,
                     d.measured ? QObject::tr("measured") : QObject::tr("estimated (profile)"),
                     QStringLiteral("%1 J").arg(joules, 0, 'f', 1),
                     d.t1 > d.t0 ? QStringLiteral("%1 W").arg(joules / (d.t1 - d.t0), 0, 'f', 2)
                                 : QStringLiteral("–"),
                     epochs > 0 ? QStringLiteral("%1 J").arg(joules / epochs, 0, 'f', 1)
                                : QStringLiteral("–")});
    }
    return rows;
}

QList<QStringList> ReportText::clusterPlanRows(const app::Session &s, int top)
{
    QList<QStringList> rows{{QObject::tr("Cluster"), QObject::tr("Mode"), QObject::tr("Time"),
                             QObject::tr("Power"), QObject::tr("Energy"), QObject::tr("EDP"),
                             QObject::tr("Note")}};
    if (!s.training.plan)
        return rows;
    const app::ClusterPlanRecord &p = *s.training.plan;
    for (int i = 0; i < int(p.candidates.size()) && i < top; ++i) {
        const auto &c = p.candidates[std::size_t(i)];
        const QString unknown = QStringLiteral("–"); // a device without power figures
        rows.append({c.nodes.join(QStringLiteral(" + ")), c.mode,
                     QStringLiteral("%1 s").arg(c.seconds, 0, 'f', 1),
                     c.powerKnown ? QStringLiteral("%1 W").arg(c.watts, 0, 'f', 2) : unknown,
                     c.powerKnown ? QStringLiteral("%1 J").arg(c.joules, 0, 'f', 0) : unknown,
                     c.powerKnown ? QStringLiteral("%1 J·s").arg(c.edp, 0, 'g', 3) : unknown,
                     i == p.chosen ? QObject::tr("chosen")
                     : !c.whyNot.isEmpty()
                         ? c.whyNot
                         : QObject::tr("ranked %1 by %2").arg(i + 1).arg(p.objective)});
    }
    return rows;
}

QString ReportText::clusterPlanSummary(const app::Session &s)
{
    if (!s.training.plan)
        return {};
    const app::ClusterPlanRecord &p = *s.training.plan;
    QString text = QObject::tr("The planner profiled the job on every device (%1 s) and ranked %2 "
                               "candidate clusters by %3 (predicted figures below).")
                       .arg(p.profilingSeconds, 0, 'f', 1)
                       .arg(p.candidates.size())
                       .arg(p.objective);
    if (p.chosen < 0)
        return text + QObject::tr(" None could train within the limits.");
    const auto &c = p.candidates[std::size_t(p.chosen)];
    if (p.measuredSeconds > 0) {
        text += QObject::tr(" The chosen cluster trained in %1 s (predicted %2 s, %3 %)")
                    .arg(p.measuredSeconds, 0, 'f', 1)
                    .arg(c.seconds, 0, 'f', 1)
                    .arg(100.0 * (c.seconds - p.measuredSeconds) / p.measuredSeconds, 0, 'f', 1);
        if (p.measuredJoules >= 0)
            text += QObject::tr(" using %1 J (predicted %2 J)")
                        .arg(p.measuredJoules, 0, 'f', 0)
                        .arg(c.joules, 0, 'f', 0);
        text += QLatin1Char('.');
    }
    return text;
}

QList<QStringList> ReportText::trackerRows(const app::Session &s)
{
    QList<QStringList> rows{{QObject::tr("Against the tracker's labels"), QObject::tr("Boxes"),
                             QObject::tr("Teacher"), QObject::tr("Student")}};
    const bool done = s.evaluation.done;
    const auto &e = s.evaluation.result;
    auto recall = [&](int boxes, double v) {
        return done && boxes > 0 ? percent(v) : QStringLiteral("–");
    };
    auto count = [&](int n) { return done ? QString::number(n) : QStringLiteral("–"); };
    rows.append({QObject::tr("Recall: boxes the teacher found"), count(e.teacher_found_boxes),
                 recall(e.teacher_found_boxes, e.teacher_recall_teacher_found),
                 recall(e.teacher_found_boxes, e.student_recall_teacher_found)});
    rows.append({QObject::tr("Recall: boxes only the tracker found"), count(e.tracker_only_boxes),
                 recall(e.tracker_only_boxes, e.teacher_recall_tracker_only),
                 recall(e.tracker_only_boxes, e.student_recall_tracker_only)});
    rows.append(
        {QObject::tr("Precision (detections)"), QString(),
         done
             ? QStringLiteral("%1 (%2)").arg(percent(e.teacher_precision)).arg(e.teacher_detections)
             : QStringLiteral("–"),
         done
             ? QStringLiteral("%1 (%2)").arg(percent(e.student_precision)).arg(e.student_detections)
             : QStringLiteral("–")});
    return rows;
}

QString ReportText::count(int n, const QString &one, const QString &many)
{
    return app::wording::counted(n, one, many);
}

QString ReportText::ordinal(int n)
{
    return app::wording::ordinal(n);
}

QString ReportText::everyNth(int n)
{
    return app::wording::everyNth(n, QStringLiteral("frame"));
}

QString ReportText::trainingFacts(const app::Session &s)
{
    const app::TrainingRecord &t = s.training;
    if (t.epochs.empty())
        return QString();
    const int run = t.epochs.back().epoch > 0 ? t.epochs.back().epoch : int(t.epochs.size());
    const int most = std::max(s.plan.epochs, run);
    QString text =
        QObject::tr("Trained %1 of at most %2 on %3 in %4 s")
            .arg(run)
            .arg(count(most, QObject::tr("epoch"), QObject::tr("epochs")))
            .arg(count(int(t.nodes.size()), QObject::tr("device"), QObject::tr("devices")))
            .arg(t.seconds, 0, 'f', 0);
    if (run < most)
        text += t.state == app::TrainingRecord::State::Finished && t.keptEpoch > 0
                    ? QObject::tr("; it stopped early, since no epoch after the %1 lowered the "
                                  "validation loss")
                          .arg(ordinal(t.keptEpoch))
                : t.state == app::TrainingRecord::State::Failed
                    ? QObject::tr("; it failed before the last epoch")
                    : QObject::tr("; it was stopped before the last epoch");
    text += QLatin1Char('.');
    if (t.keptEpoch > 0)
        text += t.averageDecay > 0
                    ? QObject::tr(" The student keeps the moving average of the weights at epoch "
                                  "%1, the one with the lowest validation loss.")
                          .arg(t.keptEpoch)
                    : QObject::tr(" The student keeps the weights of epoch %1, the one with the "
                                  "lowest validation loss.")
                          .arg(t.keptEpoch);
    else
        text += QObject::tr(" The student keeps the weights of the last epoch.");
    return text;
}

QString ReportText::galleryLegend(bool verified)
{
    using app::palette::Source;
    auto key = [](Source source, const QString &colour, const QString &what) {
        return QObject::tr("%1 %2, %3").arg(colour, app::palette::name(source), what);
    };
    if (verified)
        return QObject::tr("Boxes: %1; %2; %3; %4.")
            .arg(
                key(Source::Truth, QObject::tr("yellow"),
                    QObject::tr("solid: checked by a person")),
                key(Source::Ignore, QObject::tr("grey"), QObject::tr("dashed: counts neither way")),
                key(Source::Teacher, QObject::tr("orange"), QObject::tr("dashed")),
                key(Source::Student, QObject::tr("green"), QObject::tr("solid")));
    return QObject::tr("Boxes: %1; %2.")
        .arg(key(Source::Tracker, QObject::tr("purple"),
                 QObject::tr("dash-dot: the box the tracker carried there")),
             key(Source::Student, QObject::tr("green"), QObject::tr("solid: its detection")));
}

app::Session ReportText::withOneGainPerFrame(app::Session session)
{
    auto &gains = session.evaluation.result.gains;
    std::set<int> seen;
    gains.erase(std::remove_if(
                    gains.begin(), gains.end(),
                    [&](const vision::ViewpointGain &g) { return !seen.insert(g.frame).second; }),
                gains.end());
    return session;
}

QList<QStringList> ReportText::glossary()
{
    return {
        {QObject::tr("Term"), QObject::tr("What it means")},
        {QObject::tr("95 % interval"),
         QObject::tr("The range a figure would most likely fall in on other frames of the same "
                     "camera: drawing the verified frames again at random many times (a "
                     "bootstrap), 95 of 100 results lie inside it. Fewer frames, wider range.")},
        {QObject::tr("AP50"),
         QObject::tr("Average precision: precision averaged over every recall the detector "
                     "reaches as its threshold goes down; a box counts as found at IoU ≥ 0.5. "
                     "1 is perfect.")},
        {QObject::tr("AP@[.5:.95]"),
         QObject::tr("AP averaged over stricter and stricter overlaps (IoU 0.5 to 0.95): "
                     "rewards boxes that sit tightly on the object (the COCO measure).")},
        {QObject::tr("Early stop"),
         QObject::tr("Training ends when the validation loss has stopped falling for a number "
                     "of epochs; the student keeps the weights of the epoch where it was lowest.")},
        {QObject::tr("EDP"),
         QObject::tr(
             "Energy-delay product: energy in joules times time in seconds. Lower is better; it "
             "weighs a fast cluster and a frugal one against each other.")},
        {QObject::tr("Epoch"), QObject::tr("One pass of training over every training frame.")},
        {QObject::tr("F1"),
         QObject::tr("One figure for recall and precision together (their harmonic mean); high "
                     "only when both are.")},
        {QObject::tr("Frames/s"),
         QObject::tr("How many frames a detector handles per second on this machine.")},
        {QObject::tr("Held-out"),
         QObject::tr("Frames (or tracks) kept away from training, so the figures show how the "
                     "student does on pictures it has never seen.")},
        {QObject::tr("IoU"),
         QObject::tr("Intersection over union: how much two boxes overlap, from 0 (not at all) "
                     "to 1 (the same box).")},
        {QObject::tr("Motion"),
         QObject::tr("A baseline that boxes whatever moves against the background; only "
                     "meaningful for a camera that does not move.")},
        {QObject::tr("Operating point"),
         QObject::tr("The score threshold above which the student reports a box, chosen where "
                     "its F1 is best; it trades recall against precision.")},
        {QObject::tr("Precision"),
         QObject::tr("Of the boxes a detector reports, the share that are real: 90 % means one "
                     "false alarm in ten boxes.")},
        {QObject::tr("Recall"),
         QObject::tr("Of the objects really there, the share a detector finds: 90 % means one "
                     "in ten is missed.")},
        {QObject::tr("SHA-256"),
         QObject::tr("A fingerprint of a file: two reports whose student weights have the same "
                     "one scored the same student.")},
        {QObject::tr("Store-all"),
         QObject::tr("Training that keeps every intermediate result in memory; the memory plan "
                     "recomputes some instead, to fit a smaller budget at some extra compute.")},
        {QObject::tr("Student"),
         QObject::tr("The small network trained here for this camera, to run on the devices.")},
        {QObject::tr("Teacher"),
         QObject::tr("The ready-made detector whose boxes (with the tracker's) the student "
                     "learns from.")},
        {QObject::tr("TP / FP"),
         QObject::tr("True positives (boxes that match a verified object) and false positives "
                     "(boxes that match none).")},
        {QObject::tr("Tracker"),
         QObject::tr("Follows each object the teacher found from frame to frame, adding boxes "
                     "on frames where the teacher missed it.")},
        {QObject::tr("Validation loss"),
         QObject::tr("The training error measured on frames the student does not train on; "
                     "when it stops falling, more training stops helping.")},
        {QObject::tr("Verified frame"),
         QObject::tr("A frame whose boxes a person checked and corrected in the Verify step: "
                     "the truth the figures are measured against.")},
    };
}

} // namespace edgetrain::ui
