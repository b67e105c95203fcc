#include "viewpointpipeline.h"

#include "core/error.h"
#include "core/safetensors.h"
#include "detectorsteps.h"
#include "labeltask.h"
#include "verifiedframes.h"
#include "verifiedscoring.h"
#include "viewpointreport.h"
#include "vision/framesource.h"
#include "vision/framestudent.h"
#include "vision/studentteacher.h"
#include "vision/teacher.h"

#include <chrono>
#include <climits>
#include <cstdio>

namespace edgetrain::app {

namespace {

std::string percent(double fraction)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
    return text;
}

/** One pipeline run: its inputs, and what the rounds leave for the calibration and scoring. */
class PipelineRun
{
public:
    PipelineRun(const ViewpointPipelineOptions &o, const ViewpointCallbacks &cb,
                const std::atomic<bool> *stop)
        : m_o(o), m_cb(cb), m_stop(stop)
    {}

    ViewpointResult run();

private:
    void say(const std::string &line) const
    {
        if (m_cb.message)
            m_cb.message(line);
    }
    bool stopped() const { return m_stop && m_stop->load(); }
    void label();
    core::Json round(int round);
    core::Json trainHere(int round, const vision::FrameDatasetStats &stats);
    core::Json trainOnNodes(int round, const vision::FrameDatasetStats &stats);
    float operatingThreshold(core::Json &report);
    core::Json verified(core::Json &report);

    const ViewpointPipelineOptions &m_o;
    const ViewpointCallbacks &m_cb;
    const std::atomic<bool> *m_stop;
    std::unique_ptr<vision::FrameSource> m_source;
    vision::LabelResult m_labels;
    std::shared_ptr<core::Model> m_model;
    std::vector<std::string> m_roundWeights;
    float m_threshold = 0.3f;
};

ViewpointResult PipelineRun::run()
{
    const auto t0 = std::chrono::steady_clock::now();
    m_source = vision::FrameSource::open(m_o.source);
    label();
    core::Json report;
    report.set("student", "frames");
    core::Json rounds = core::Json::array();
    for (int r = 1; r <= m_o.rounds; ++r)
        rounds.push(round(r));
    m_threshold = operatingThreshold(report);
    report.set("student_threshold", double(m_threshold));
    const std::string weights = vision::StudentTeacher::weightsPath(m_o.sessionDir);
    if (m_o.studentThreshold) // calibrated weights were saved with their threshold already
        vision::FrameStudent::saveModel(*m_model, weights, m_threshold);
    report.set("rounds", std::move(rounds)).set("student_weights", weights);
    if (!m_o.truth.frames.empty())
        report.set("verified", verified(report));
    else
        say("no verified frames (--truth, or truth.json in the session): the student is "
            "not evaluated against ground truth");
    report.set("seconds",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return {std::move(m_labels), std::move(report)};
}

void PipelineRun::label()
{
    if (m_o.labels) {
        m_labels = *m_o.labels;
        m_labels.options.max_frames = m_o.label.max_frames; // self-training stays within
    } else {
        auto teacher = vision::Teacher::create(m_o.teacher);
        teacher->threshold = m_o.teacherThreshold;
        std::string saveError;
        m_labels = labelSource(*m_source, *teacher, m_o.label, m_o.sessionDir, m_cb.labelProgress,
                               m_stop, &saveError);
        if (!saveError.empty()) // said with the run's own reason, not instead of it
            m_labels.stopped += (m_labels.stopped.empty() ? "" : "; ") + saveError;
        if (m_cb.labelled)
            m_cb.labelled(m_labels);
    }
    m_labels.save(m_o.sessionDir);
    if (m_labels.cancelled)
        throw core::Error("cancelled while labelling (the tracks so far are in " + m_o.sessionDir +
                          "/labels.json)");
    if (!m_labels.stopped.empty())
        throw core::Error("labelling stopped at " + m_labels.stopped +
                          " (the tracks so far are in " + m_o.sessionDir + "/labels.json)");
}

core::Json PipelineRun::round(int round)
{
    core::Json rj;
    rj.set("round", round);
    vision::FrameDatasetOptions d = m_o.dataset;
    d.max_frame = m_o.label.max_frames;
    const StepProgress &progress = m_cb.progress;
    vision::FrameDatasetStats stats;
    if (round > 1) {
        m_labels.round = round;
        const auto step = selfTrain(m_labels, *m_source, *m_model, m_o.selfThreshold,
                                    m_o.sessionDir, d, progress, m_stop);
        if (!step)
            throw core::Error("cancelled while self-training");
        char line[200];
        std::snprintf(line, sizeof line,
                      "self-training: the student's run found %d tracks; %d new, %d student "
                      "boxes and %d tracker boxes join the labels (%.1f s)",
                      step->added.tracks, step->added.new_tracks, step->added.student_boxes,
                      step->added.tracker_boxes, step->added.seconds);
        say(line);
        rj.set("student_boxes_added", step->added.student_boxes)
            .set("tracker_boxes_added", step->added.tracker_boxes)
            .set("tracks_added", step->added.new_tracks);
        stats = step->dataset;
    } else {
        stats = vision::FrameDataset::build(
            m_o.sessionDir, m_labels, *m_source, d,
            [&](int f, int n) {
                if (progress)
                    progress(f, n, QStringLiteral("frame dataset: frame %1/%2").arg(f).arg(n));
            },
            m_stop);
        if (stopped())
            throw core::Error("cancelled while building the frame dataset");
    }
    rj.set("dataset",
           Internal::frameDatasetReport(stats, m_labels, [&](const std::string &l) { say(l); }));
    const core::Json trained = m_o.cluster ? trainOnNodes(round, stats) : trainHere(round, stats);
    for (const auto &[key, value] : trained.toObject())
        rj.set(key, value);
    return rj;
}

core::Json PipelineRun::trainHere(int round, const vision::FrameDatasetStats &stats)
{
    if (!m_model) {
        m_model = std::make_shared<core::Model>(vision::FrameStudentTrainer::spec(stats.input),
                                                m_o.train.seed);
        const core::Model::Tiling t =
            resolveTiling(m_model->spec(), m_o.train.batch, -1, m_o.tiling);
        m_model->setTiling(t.stages, t.rows, t.cols);
        if (t.active())
            say("the detector's first " + std::to_string(t.stages) + " stages run on " +
                std::to_string(t.rows) + "x" + std::to_string(t.cols) + " tiles");
    }
    vision::FrameTrainOptions rt = m_o.train;
    const int epochs = round == 1 ? rt.epochs : std::max(1, rt.epochs / 2);
    rt.epochs = epochs;
    if (round > 1)
        rt.lr = m_o.train.lr / 2; // from the first round's weights
    say("round " + std::to_string(round) + ": training the detector (" +
        std::to_string(m_model->parameterCount()) + " parameters) for " + std::to_string(epochs) +
        " epochs");
    core::Trainer::Callbacks callbacks;
    callbacks.onEpoch = [&](const core::EpochStats &e) {
        char l[200];
        std::snprintf(l, sizeof l,
                      "round %d epoch %d/%d: loss %.4f, centre recall %.1f%%, validation "
                      "loss %.4f, centre recall %s (%.1f s)",
                      round, e.epoch, epochs, e.train_loss, 100 * e.train_accuracy, e.test_loss,
                      e.test_accuracy < 0 ? "n/a" : percent(e.test_accuracy).c_str(),
                      e.train_seconds);
        say(l);
    };
    const auto trained =
        vision::FrameStudentTrainer::train(*m_model, m_o.sessionDir, rt, callbacks, m_stop);
    if (trained.cancelled)
        throw core::Error("cancelled while training the detector");
    const std::string weights =
        m_o.sessionDir + "/detector-round" + std::to_string(round) + ".safetensors";
    core::Safetensors::saveModel(*m_model, weights);
    m_roundWeights.push_back(weights);
    core::Json rj;
    if (!trained.epochs.empty())
        rj.set("train_loss", trained.epochs.back().train_loss)
            .set("train_centre_recall", trained.epochs.back().train_accuracy)
            .set("validation_centre_recall", trained.epochs.back().test_accuracy);
    const int best = vision::FrameStudentTrainer::bestEpoch(trained);
    const int ran = int(trained.epochs.size());
    if (best > 0)
        say("round " + std::to_string(round) + ": kept the weights of epoch " +
            std::to_string(best) + " (lowest validation loss)" +
            (rt.average_decay > 0 ? ", their moving average" : "") +
            (ran < rt.epochs
                 ? "; ended after epoch " + std::to_string(ran) + " of " +
                       std::to_string(rt.epochs) + ": none lower in " + std::to_string(rt.patience)
                 : std::string()));
    rj.set("best_epoch", best).set("average_decay", rt.average_decay);
    rj.set("epochs_trained", ran).set("patience", rt.patience);
    rj.set("epochs", epochs).set("train_seconds", trained.train_seconds);
    return rj;
}

core::Json PipelineRun::trainOnNodes(int round, const vision::FrameDatasetStats &stats)
{
    const std::string weights =
        m_o.sessionDir + "/detector-round" + std::to_string(round) + ".safetensors";
    ClusterJob job;
    job.spec = vision::FrameStudentTrainer::spec(stats.input);
    job.frames = true;
    job.epochs = m_o.train.epochs;
    job.batch = m_o.train.batch;
    job.lr = m_o.train.lr;
    job.seed = m_o.train.seed;
    job.averageDecay = m_o.train.average_decay;
    job.keepBest = m_o.train.keep_best;
    job.patience = m_o.train.patience;
    job.sessionDir = QString::fromStdString(m_o.sessionDir);
    job.weightsPath = QString::fromStdString(weights);
    job.idPrefix = QStringLiteral("viewpoint");
    const TrainingSetup setup = clusterSetup(job, *m_o.cluster);
    say("round " + std::to_string(round) + ": training the detector on " +
        std::to_string(setup.nodes.size()) + " node(s), mode " +
        net::modeName(setup.job.mode).toStdString() + ", for " + std::to_string(job.epochs) +
        " epochs");
    std::vector<net::ClusterEpoch> epochs;
    ClusterCallbacks callbacks;
    callbacks.status = [&](const QString &text) { say("  " + text.toStdString()); };
    callbacks.epoch = [&](const net::ClusterEpoch &e) {
        epochs.push_back(e);
        char l[240];
        std::snprintf(l, sizeof l,
                      "round %d epoch %d/%d on %d node(s): loss %.4f, centre recall %.1f%%, "
                      "validation loss %.4f, centre recall %s (%.1f s)",
                      round, e.epoch, job.epochs, e.nodes, e.train_loss, 100 * e.train_accuracy,
                      e.test_loss, e.test_accuracy < 0 ? "n/a" : percent(e.test_accuracy).c_str(),
                      e.seconds);
        say(l);
    };
    callbacks.event = [&](const net::ClusterEvent &e) {
        say("  " + (e.node.isNone() ? std::string("cluster") : e.node.name.toStdString()) + " " +
            net::eventKindName(e.kind).toStdString() + ": " + e.message.toStdString());
    };
    const TrainingOutcome outcome = trainOnCluster(setup, callbacks, m_stop);
    if (outcome.cancelled || stopped())
        throw core::Error("cancelled while training the detector on the nodes");
    if (!outcome.ok)
        throw core::Error("training the detector on the nodes failed: " +
                          outcome.error.toStdString());
    if (!outcome.weightsSaved)
        throw core::Error("training on the nodes ended without the trained weights");
    m_model = std::shared_ptr<core::Model>(vision::FrameStudent::loadModel(weights));
    m_roundWeights.push_back(weights);
    if (outcome.keptEpoch > 0)
        say("round " + std::to_string(round) + ": kept the weights of epoch " +
            std::to_string(outcome.keptEpoch) + " (lowest validation loss)" +
            (outcome.endedEarlyEpoch > 0
                 ? "; ended after epoch " + std::to_string(outcome.endedEarlyEpoch) + " of " +
                       std::to_string(job.epochs) + ": none lower in " +
                       std::to_string(job.patience)
                 : std::string()));
    core::Json rj;
    double seconds = 0;
    for (const net::ClusterEpoch &e : epochs)
        seconds += e.seconds;
    if (!epochs.empty())
        rj.set("train_loss", epochs.back().train_loss)
            .set("train_centre_recall", epochs.back().train_accuracy)
            .set("validation_centre_recall", epochs.back().test_accuracy);
    rj.set("best_epoch", outcome.keptEpoch).set("average_decay", job.averageDecay);
    rj.set("epochs_trained", int(epochs.size())).set("patience", job.patience);
    rj.set("epochs", job.epochs).set("train_seconds", seconds);
    rj.set("nodes", int(setup.nodes.size()))
        .set("mode", net::modeName(setup.job.mode).toStdString());
    rj.set("cluster_seconds", outcome.seconds);
    return rj;
}

float PipelineRun::operatingThreshold(core::Json &report)
{
    if (m_o.studentThreshold)
        return *m_o.studentThreshold;
    const auto built = vision::FrameDataset::stats(m_o.sessionDir);
    const vision::OperatingPoint point = calibrateStudent(
        *m_source, m_model, m_labels, built ? std::optional(built->ground) : std::nullopt,
        vision::StudentTeacher::weightsPath(m_o.sessionDir), m_cb.progress, m_stop);
    if (stopped())
        throw core::Error("cancelled while calibrating the student's threshold");
    report.set("operating_point", Internal::operatingPointReport(
                                      point, "labels", [&](const std::string &l) { say(l); }));
    return point.threshold;
}

core::Json PipelineRun::verified(core::Json &report)
{
    vision::GroundTruth truth = m_o.truth;
    const int split = m_o.label.max_frames;
    if (m_o.seenOnly && split > 0) // tuning: the frames >= max-frames are neither run nor scored
        std::erase_if(truth.frames, [&](const vision::TruthFrame &f) { return f.index >= split; });
    const BaselineDetectors baselines(QString::fromStdString(m_o.teacher),
                                      QString::fromStdString(m_o.source), m_o.teacherThreshold,
                                      !m_labels.cuts.empty());
    std::vector<VerifiedDetector> detectors = baselines.list();
    const int nBaselines = int(detectors.size());
    std::vector<std::unique_ptr<vision::StudentTeacher>> students;
    for (std::size_t r = 0; r < m_roundWeights.size(); ++r) {
        students.push_back(std::make_unique<vision::StudentTeacher>(
            std::shared_ptr<core::Model>(vision::FrameStudent::loadModel(m_roundWeights[r]))));
        detectors.push_back({"student r" + std::to_string(r + 1), students.back().get(),
                             m_threshold, std::min(0.05f, m_threshold)});
    }
    say("evaluating teacher" + std::string(baselines.motion ? ", motion" : "") +
        " and student on " + std::to_string(truth.doneFrames()) + " verified frames");
    const VerifiedRun run(*m_source, truth, detectors, 0, INT_MAX, m_cb.progress, m_stop);
    if (stopped())
        throw core::Error("cancelled while scoring the verified frames");
    auto sayLine = [&](const std::string &l) { say(l); };
    // A person's truth on the frames the last round trained on chooses its threshold, as the
    // window's evaluation does; the held-out frames stay out of it (not when tuning on them).
    const float labelsThreshold = m_threshold;
    if (!m_o.studentThreshold && !m_o.seenOnly && split > 0)
        if (const auto point =
                verifiedOperatingPoint(run.truth(), run.detections(detectors.size() - 1), split)) {
            m_threshold = point->threshold;
            vision::FrameStudent::saveModel(
                *m_model, vision::StudentTeacher::weightsPath(m_o.sessionDir), m_threshold);
            report.set("operating_point",
                       Internal::operatingPointReport(*point, "verified", sayLine));
            report.set("student_threshold", double(m_threshold));
        }
    std::vector<VerifiedDetections::Detector> scored;
    for (std::size_t i = 0; i < detectors.size(); ++i)
        scored.push_back({detectors[i].name,
                          int(i) < nBaselines ? detectors[i].threshold : m_threshold,
                          run.detections(i)});
    core::Json v =
        split <= 0 ? Internal::verifiedSpanReport(run.truth(), scored, nBaselines, 0, INT_MAX,
                                                  m_o.matchIou, "(all)", sayLine)
        : m_o.seenOnly
            ? core::Json::object()
            : Internal::verifiedSpanReport(run.truth(), scored, nBaselines, split, INT_MAX,
                                           m_o.matchIou, ">= max-frames (held out)", sayLine);
    if (split > 0)
        v.set("seen", Internal::verifiedSpanReport(run.truth(), scored, nBaselines, 0, split - 1,
                                                   m_o.matchIou, "< max-frames (seen in training)",
                                                   sayLine));
    if (m_threshold != labelsThreshold && split > 0) {
        // What the labels' threshold would have given on the same held-out frames, for comparison.
        for (std::size_t i = std::size_t(nBaselines); i < scored.size(); ++i)
            scored[i].threshold = labelsThreshold;
        v.set("held_out_at_labels_threshold",
              Internal::verifiedSpanReport(run.truth(), scored, nBaselines, split, INT_MAX,
                                           m_o.matchIou, "", [](const std::string &) {}));
    }
    core::Json fps;
    for (std::size_t i = 0; i < detectors.size(); ++i)
        fps.set(int(i) < nBaselines ? detectors[i].name
                                    : "student_r" + std::to_string(int(i) - nBaselines + 1),
                run.fps(i));
    v.set("detect_fps", std::move(fps));
    return v;
}

} // namespace

ViewpointResult runViewpointPipeline(const ViewpointPipelineOptions &options,
                                     const ViewpointCallbacks &callbacks,
                                     const std::atomic<bool> *stop)
{
    return PipelineRun(options, callbacks, stop).run();
}

} // namespace edgetrain::app
