#include "evaluationtask.h"

#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "vision/cropdataset.h"
#include "vision/detectionmetrics.h"
#include "vision/detectionrun.h"
#include "vision/framedataset.h"
#include "vision/framesource.h"
#include "vision/studentteacher.h"
#include "vision/teacher.h"

#include <QFileInfo>

#include <algorithm>
#include <set>

namespace edgetrain::app {

EvaluationTask::EvaluationTask(const Session &session,
                               std::shared_ptr<const vision::LabelResult> labels,
                               vision::GroundTruth truth)
    : m_session(session), m_labels(std::move(labels)), m_truth(truth.doneOnly())
{}

std::string EvaluationTask::detectorPart(const QString &teacher)
{
    const QString suffix = QStringLiteral("+motion");
    return (teacher.endsWith(suffix) ? teacher.left(teacher.size() - suffix.size()) : teacher)
        .toStdString();
}

bool EvaluationTask::fixedCamera(const QString &source)
{
    return QFileInfo(source).isFile() && !source.startsWith(QLatin1String("/dev/"));
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

    // 0. The operating point, on the frames the student trained on; kept with its weights so
    //    every later user of the student (detect, the live preview) runs it there.
    vision::OperatingPointCalibration::Options calibration;
    if (s.frameStats) // the targets it trained on: nested boxes settled by the same plane
        calibration.plane = s.frameStats->ground;
    const vision::OperatingPoint point = vision::OperatingPointCalibration::calibrate(
        *source, student, *m_labels, calibration,
        [&](int d, int n) {
            report(
                d, n,
                QStringLiteral("operating point against the labels: frame %1 of %2").arg(d).arg(n));
        },
        stop);
    if (stop && stop->load())
        return out;
    out.operating_point = point;
    vision::FrameStudent::saveModel(*model, weights, point.threshold);
    const float studentThreshold = point.threshold;
    student.threshold = studentThreshold;

    // 1. Against the tracker's labels, each detector at its operating point.
    vision::ViewpointOptions o;
    o.eval_frames = s.evaluation.frames;
    out.result = vision::Viewpoint::evaluate(
        *source, *teacher, student, *m_labels, heldOutTracks(*m_labels, s.dir), o, stop,
        [&](int d, int n) {
            report(d, n,
                   QStringLiteral("against the tracker's labels: frame %1 of %2").arg(d).arg(n));
        });
    if ((stop && stop->load()) || m_truth.frames.empty())
        return out;

    // 2. Against the verified frames the student never saw.
    const int first = heldOutFrom(*m_labels, source->frameCount());
    std::set<int> frames;
    for (const vision::TruthFrame &f : m_truth.frames)
        if (f.index >= first)
            frames.insert(f.index);
    if (frames.empty())
        return out;
    auto verifiedTeacher = vision::Teacher::create(detectorPart(s.capture.teacher));
    std::unique_ptr<vision::Teacher> motion;
    if (fixedCamera(QString::fromStdString(m_labels->source)))
        motion = vision::Teacher::create("motion");
    student.threshold =
        std::min(kCurveScore, studentThreshold); // the whole curve; scored at studentThreshold
    std::vector<vision::Teacher *> detectors{verifiedTeacher.get()};
    if (motion)
        detectors.push_back(motion.get());
    detectors.push_back(&student);
    const auto run = vision::DetectionRun::run(
        *source, detectors, frames,
        [&](int d, int n) {
            report(d, n, QStringLiteral("verified frames: %1 of %2").arg(d).arg(n));
        },
        stop);
    if (stop && stop->load())
        return out;

    VerifiedRound v;
    v.round = s.round;
    v.first_frame = first;
    vision::MetricsOptions m;
    m.first_frame = first;
    auto fps = [&](std::size_t i) {
        return run.detect_seconds[i] > 0 ? double(run.frames) / run.detect_seconds[i] : 0.0;
    };
    m.threshold = verifiedTeacher->threshold;
    v.scores.push_back(
        vision::DetectionMetrics::evaluate("teacher", run.detections[0], m_truth, m));
    out.teacher_fps = fps(0);
    if (motion) {
        m.threshold = motion->threshold;
        v.scores.push_back(
            vision::DetectionMetrics::evaluate("motion", run.detections[1], m_truth, m));
        out.motion_fps = fps(1);
    }
    m.threshold = studentThreshold;
    v.scores.push_back(
        vision::DetectionMetrics::evaluate("student", run.detections.back(), m_truth, m));
    out.student_fps = fps(detectors.size() - 1);
    v.frames = v.scores.front().frames;
    out.verified = v;
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
