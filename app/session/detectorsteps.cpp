#include "detectorsteps.h"

#include "vision/framesource.h"
#include "vision/framestudent.h"
#include "vision/studentteacher.h"

namespace edgetrain::app {

namespace {

bool stopped(const std::atomic<bool> *stop)
{
    return stop && stop->load();
}

} // namespace

vision::OperatingPoint calibrateStudent(vision::FrameSource &source,
                                        const std::shared_ptr<core::Model> &student,
                                        const vision::LabelResult &labels,
                                        const std::optional<vision::GroundPlane> &plane,
                                        const std::string &weightsPath,
                                        const StepProgress &progress, const std::atomic<bool> *stop)
{
    vision::StudentTeacher detector(student);
    vision::OperatingPointCalibration::Options options;
    if (plane) // the targets it trained on: nested boxes settled by the same plane
        options.plane = *plane;
    const vision::OperatingPoint point = vision::OperatingPointCalibration::calibrate(
        source, detector, labels, options,
        [&](int done, int total) {
            if (progress)
                progress(done, total,
                         QStringLiteral("operating point against the labels: frame %1 of %2")
                             .arg(done)
                             .arg(total));
        },
        stop);
    if (!stopped(stop) && !weightsPath.empty())
        vision::FrameStudent::saveModel(*student, weightsPath, point.threshold);
    return point;
}

std::optional<SelfTrainingStep> selfTrain(vision::LabelResult &labels, vision::FrameSource &source,
                                          core::Model &student, float threshold,
                                          const std::string &sessionDir,
                                          const vision::FrameDatasetOptions &dataset,
                                          const StepProgress &progress,
                                          const std::atomic<bool> *stop)
{
    vision::SelfTrainOptions o;
    o.threshold = threshold;
    o.label = labels.options; // the same frames, tracker and teacher rhythm
    SelfTrainingStep step;
    step.added = vision::FrameStudentTrainer::relabel(
        labels, source, student, o,
        [&](int f, int n, const vision::LabelStats &) {
            if (progress)
                progress(f, n, QStringLiteral("the student relabels frame %1 of %2").arg(f).arg(n));
        },
        stop);
    if (stopped(stop))
        return std::nullopt;
    step.dataset = vision::FrameDataset::build(
        sessionDir, labels, source, dataset,
        [&](int f, int n) {
            if (progress)
                progress(f, n,
                         QStringLiteral("rebuilding the dataset: frame %1 of %2").arg(f).arg(n));
        },
        stop);
    if (stopped(stop))
        return std::nullopt;
    labels.save(sessionDir);
    return step;
}

} // namespace edgetrain::app
