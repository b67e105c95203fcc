#include "evaluationtask.h"

#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "detectorsteps.h"
#include "verifiedframes.h"
#include "vision/cropdataset.h"
#include "vision/detectionmetrics.h"
#include "vision/detectionrun.h"
#include "vision/framedataset.h"
#include "vision/framesource.h"
#include "vision/framestudent.h"
#include "vision/studentteacher.h"
#include "vision/teacher.h"

#include <QFileInfo>

#include <algorithm>
#include <set>

namespace edgetrain::app {

EvaluationTask::EvaluationTask(const Session &session,
                               std::shared_ptr<const vision::LabelResult> labels,
                               vision::GroundTruth truth)
    : m_session(session), m_labels(std::move(labels)), m_truth(std::move(truth))
{}

std::string EvaluationTask::detectorPart(const QString &teacher)
{
    return app::detectorPart(teacher);
}

bool EvaluationTask::fixedCamera(const QString &source)
{
    return app::fixedCamera(source);
}

int EvaluationTask::heldOutFrom(const vision::LabelResult &labels, int sourceFrames)
{
    const int max = labels.options.max_frames;
    return max > 0 && (sourceFrames <= 0 || max < sourceFrames) ? max : 0;
}

EvaluationOutcome EvaluationTask::run(const TaskRunner::Report &report,
                                      const std::atomic<bool> *stop) const
{
    EvaluationOutcome out;
    try {
        // One compute thread: the GUI keeps a core, and the frames/s are one core's.
        core::setThreadCount(1);
        out = m_session.dataset.kind == QLatin1String("crops") ? runCrops(report, stop)
                                                               : runFrames(report, stop);
        if (stop && stop->load()) {
            out = EvaluationOutcome();
            out.error = QStringLiteral("cancelled");
        }
    } catch (const std::exception &e) {
        out = EvaluationOutcome();
        out.error = QString::fromStdString(e.what());
    }
    return out;
}

EvaluationOutcome EvaluationTask::runCrops(const TaskRunner::Report &report,
                                           const std::atomic<bool> *stop) const
{
    const Session &s = m_session;
    EvaluationOutcome out;
    core::Model student(core::Zoo::resolve(s.plan.model.toStdString())
                            .withInputShape(core::Shape{3, s.dataset.height, s.dataset.width}),
                        1);
    core::Safetensors::loadModel(student, s.path(s.training.weights).toStdString());
    auto teacher = vision::Teacher::create(detectorPart(s.capture.teacher));
    auto source = vision::FrameSource::open(m_labels->source);
    vision::StudentDetector detector(student);
    vision::ViewpointOptions o;
    o.crops.size = cv::Size(s.dataset.width, s.dataset.height);
    o.crops.negatives_per_positive = s.dataset.negativesPerPositive;
    o.crops.seed = std::uint64_t(s.dataset.seed);
    o.eval_frames = s.evaluation.frames;
    const auto splits = vision::CropDataset::splitTracks(*m_labels, o.crops);
    out.result = vision::Viewpoint::evaluate(
        *source, *teacher, detector, *m_labels, splits, o, stop,
        [&](int d, int n) { report(d, n, QStringLiteral("frame %1 of %2").arg(d).arg(n)); });
    return out;
}

namespace {

/** Tracks that start in a time block holding a validation frame of the frame dataset: the
 *  detector trained on the other blocks. Without a frame dataset, the crops' split by track. */
std::map<int, vision::Split> heldOutTracks(const vision::LabelResult &labels, const QString &dir)
{
    std::vector<vision::FrameSample> index;
    try {
        index = vision::FrameDataset::index(dir.toStdString());
    } catch (const std::exception &) {
        return vision::CropDataset::splitTracks(labels, vision::CropOptions());
    }
    const int block = vision::FrameDatasetOptions().block_frames;
    std::set<int> validationBlocks;
    for (const vision::FrameSample &f : index)
        if (f.split == vision::Split::Validation && f.frame >= 0)
            validationBlocks.insert(f.frame / block);
    std::map<int, vision::Split> splits;
    for (const vision::Track &t : labels.tracks)
        if (!t.boxes.empty())
            splits[t.id] = validationBlocks.count(t.boxes.front().frame / block)
                               ? vision::Split::Test
                               : vision::Split::Train;
    return splits;
}

} // namespace

EvaluationOutcome EvaluationTask::runFrames(const TaskRunner::Report &report,
                                            const std::atomic<bool> *stop) const
{
    const Session &s = m_session;
    EvaluationOutcome out;
    const std::string weights = s.path(s.training.weights).toStdString();
    const std::shared_ptr<core::Model> model(vision::FrameStudent::loadModel(weights));
    vision::StudentTeacher student(model);
    auto teacher = vision::Teacher::create(detectorPart(s.capture.teacher));
    auto source = vision::FrameSource::open(m_labels->source);

    // 0. The operating point, on the frames the student trained on (kept with its weights).
    vision::OperatingPoint point = calibrateStudent(
        *source, model, *m_labels,
        s.frameStats ? std::optional(s.frameStats->ground) : std::nullopt, weights, report, stop);
    if (stop && stop->load())
        return out;

    // 1. Every detector over the picked frames, verified or not yet.
    const int first = heldOutFrom(*m_labels, source->frameCount());
    const BaselineDetectors baselines(s.capture.teacher, QString::fromStdString(m_labels->source),
                                      std::nullopt, !m_labels->cuts.empty());
    std::vector<VerifiedDetector> detectors = baselines.list();
    detectors.push_back(
        {"student", &student, point.threshold, std::min(kCurveScore, point.threshold)});
    std::optional<VerifiedRun> run;
    if (!m_truth.frames.empty()) {
        run.emplace(*source, m_truth, detectors, 0, INT_MAX, report, stop, true);
        if (stop && stop->load())
            return out;
        // 2. A person's truth on the frames it trained on, when there is enough of it.
        if (const auto verified =
                verifiedOperatingPoint(m_truth, run->detections(detectors.size() - 1), first)) {
            point = *verified;
            out.operating_point_against = QStringLiteral("verified");
        }
    }
    out.operating_point = point;
    student.threshold = point.threshold;

    // 3. Against the tracker's labels, each detector at its operating point.
    vision::ViewpointOptions o;
    o.eval_frames = s.evaluation.frames;
    out.result = vision::Viewpoint::evaluate(
        *source, *teacher, student, *m_labels, heldOutTracks(*m_labels, s.dir), o, stop,
        [&](int d, int n) {
            report(d, n,
                   QStringLiteral("against the tracker's labels: frame %1 of %2").arg(d).arg(n));
        });
    if (stop && stop->load())
        return out;
    // Saved once nothing can cancel any more: the weights never carry a threshold the session
    // does not state.
    if (out.operating_point_against == QLatin1String("verified"))
        vision::FrameStudent::saveModel(*model, weights, point.threshold);
    if (!run)
        return out;

    // 4. Against the verified frames the student never saw, with intervals.
    VerifiedDetections kept;
    kept.round = s.round;
    kept.first_frame = first;
    kept.frames = run->ranFrames();
    for (std::size_t i = 0; i < detectors.size(); ++i)
        kept.detectors.push_back(
            {detectors[i].name,
             i + 1 == detectors.size() ? point.threshold : detectors[i].threshold,
             run->detections(i)});
    out.teacher_fps = run->fps(0);
    if (baselines.motion)
        out.motion_fps = run->fps(1);
    out.student_fps = run->fps(detectors.size() - 1);
    VerifiedRound v = scoreVerified(m_truth, kept);
    out.detections = std::move(kept);
    if (v.frames > 0)
        out.verified = std::move(v);
    return out;
}

QString EvaluationTask::summary(const vision::ViewpointEvaluation &e)
{
    return QStringLiteral("against the tracker's labels: on boxes only the tracker found, the "
                          "student finds %1 %, the teacher %2 %")
        .arg(100 * e.student_recall_tracker_only, 0, 'f', 1)
        .arg(100 * e.teacher_recall_tracker_only, 0, 'f', 1);
}

QString EvaluationTask::summary(const VerifiedRound &v)
{
    QStringList parts;
    for (const vision::DetectorScore &sc : v.scores)
        parts.append(QStringLiteral("%1 %2 % at %3 % precision")
                         .arg(QString::fromStdString(sc.name))
                         .arg(100 * sc.recall, 0, 'f', 0)
                         .arg(100 * sc.precision, 0, 'f', 0));
    return QStringLiteral("on %1 verified frames%2 (round %3), finds the people: %4")
        .arg(v.frames)
        .arg(v.first_frame > 0 ? QStringLiteral(" from frame %1 on").arg(v.first_frame) : QString())
        .arg(v.round)
        .arg(parts.join(QStringLiteral("; ")));
}

QString EvaluationTask::summary(const EvaluationOutcome &o)
{
    if (o.verified)
        return summary(*o.verified);
    return o.result ? summary(*o.result) + QStringLiteral(" (verify frames for figures against "
                                                          "ground truth)")
                    : o.error;
}

} // namespace edgetrain::app
