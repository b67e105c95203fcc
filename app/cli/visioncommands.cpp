#include "visioncommands.h"

#include "clicontext.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "labelcommand.h"
#include "vision/cropdataset.h"
#include "vision/detectionmetrics.h"
#include "vision/detectionrun.h"
#include "vision/framedataset.h"
#include "vision/framestudenttrainer.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"
#include "vision/operatingpoint.h"
#include "vision/studentdetector.h"
#include "vision/studentteacher.h"
#include "vision/tracking.h"
#include "vision/viewpoint.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace edgetrain::app {

namespace {

vision::CropStats buildDataset(CliContext &cli, const std::string &session,
                               const vision::LabelResult &labels, vision::FrameSource &source,
                               const vision::CropOptions &o)
{
    const auto stats = vision::CropDataset::build(
        session, labels, source, o,
        [&](int f, int n) {
            cli.progress("dataset: frame " + std::to_string(f) + "/" + std::to_string(n));
        },
        CliContext::stopFlag());
    cli.progressDone();
    char line[240];
    std::snprintf(line, sizeof line,
                  "dataset %dx%d: train %d tracks %d positives %d negatives; val %d / %d / %d; "
                  "test %d / %d / %d",
                  o.size.width, o.size.height, stats.tracks[0], stats.positives[0],
                  stats.negatives[0], stats.tracks[1], stats.positives[1], stats.negatives[1],
                  stats.tracks[2], stats.positives[2], stats.negatives[2]);
    cli.message(line);
    if (stats.dropped.total() > 0)
        cli.message(std::to_string(stats.dropped.total()) +
                    " label boxes cut no crop: " + stats.dropped.summary(2.0));
    return stats;
}

core::Json datasetJson(const vision::CropStats &s, cv::Size size)
{
    core::Json j;
    j.set("width", size.width).set("height", size.height);
    const char *names[] = {"train", "val", "test"};
    for (int i = 0; i < 3; ++i) {
        core::Json split;
        split.set("tracks", s.tracks[i])
            .set("positives", s.positives[i])
            .set("negatives", s.negatives[i]);
        j.set(names[i], std::move(split));
    }
    return j;
}

void writeAtomically(const std::string &path, const std::string &text)
{
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out)
            throw core::IoError("cannot write '" + tmp + "'");
    }
    std::filesystem::rename(tmp, path);
}

/** --truth (MOT gt.txt) with --truth-frames (the verified frames, one index a line, frames
 *  without boxes included), or the session's truth.json. Empty when there is neither. */
vision::GroundTruth loadTruth(const CliContext &cli, const std::string &session,
                              vision::FrameSource &source)
{
    if (!cli.isSet("truth")) {
        if (vision::GroundTruth::exists(session))
            return vision::GroundTruth::load(session).doneOnly();
        return {};
    }
    vision::GroundTruth truth = vision::GroundTruth::importFile(
        cli.text("truth"), vision::AnnotationFormat::Mot, source.frameSize(), source.frameCount());
    if (cli.isSet("truth-frames")) {
        const std::string path = cli.text("truth-frames");
        std::ifstream in(path);
        if (!in)
            throw core::IoError("cannot read '" + path + "'");
        std::set<int> listed;
        std::string line;
        for (int n = 1; std::getline(in, line); ++n) {
            if (line.find_first_not_of(" \t\r") == std::string::npos)
                continue;
            char *end = nullptr;
            const long f = std::strtol(line.c_str(), &end, 10);
            if (end == line.c_str() || f < 0 ||
                (source.frameCount() > 0 && f >= source.frameCount()))
                throw core::FormatError(path + ":" + std::to_string(n) + ": '" + line +
                                        "' is not a frame index of the source");
            listed.insert(int(f));
        }
        for (vision::TruthFrame &f : truth.frames)
            f.done = listed.count(f.index) > 0;
        for (int f : listed)
            truth.ensureFrame(f).done = true;
    }
    return truth.doneOnly();
}

core::Json scoreJson(const vision::DetectorScore &s)
{
    core::Json j;
    j.set("recall", s.recall).set("precision", s.precision).set("f1", s.f1);
    j.set("ap50", s.ap50).set("ap50_95", s.ap50_95);
    j.set("truths", s.truths).set("detections", s.detections).set("threshold", double(s.threshold));
    return j;
}

std::string scoreLine(const vision::DetectorScore &s)
{
    char line[200];
    std::snprintf(line, sizeof line,
                  "  %-10s recall %.3f  precision %.3f  F1 %.3f  AP50 %.3f  AP50:95 %.3f  (%d/%d)",
                  s.name.c_str(), s.recall, s.precision, s.f1, s.ap50, s.ap50_95, s.true_positives,
                  s.truths);
    return line;
}

int runFrameViewpoint(CliContext &cli, const std::string &sourceSpec, const std::string &out,
                      vision::LabelOptions labelOptions)
{
    const int epochs = cli.isSet("epochs") ? int(cli.integer("epochs", 1, 1000)) : 40;
    const int rounds = int(cli.integer("rounds", 1, 5));
    const bool autoThreshold = cli.text("student-threshold") == "auto";
    float studentThreshold =
        autoThreshold ? 0.3f : float(cli.number("student-threshold", 0.01, 0.99));
    const std::string evalSpan = cli.text("eval");
    if (evalSpan != "all" && evalSpan != "seen")
        throw UsageError("--eval must be all or seen, not '" + evalSpan + "'");
    const std::uint64_t seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    vision::FrameDatasetOptions d;
    d.width = int(cli.integer("width", 64, 1024));
    d.every = int(cli.integer("sample-every", 0, 10000));
    d.max_frame = labelOptions.max_frames;
    d.augmented = int(cli.integer("augment", 0, 10));
    d.seed = seed;
    vision::FrameTrainOptions t;
    t.epochs = epochs;
    t.lr = cli.number("lr", 1e-5, 1.0);
    t.batch = cli.integer("batch", 2, 256);
    t.seed = seed;
    const std::string keep = cli.text("keep");
    if (keep != "best" && keep != "last")
        throw UsageError("--keep must be best or last, not '" + keep + "'");
    t.keep_best = keep == "best";
    t.average_decay = cli.number("average", 0.0, 0.9999);
    t.patience = int(cli.integer("patience", 0, 100000));
    auto teacher = makeTeacher(cli);
    auto source = vision::FrameSource::open(sourceSpec);
    const auto t0 = std::chrono::steady_clock::now();

    vision::LabelResult labels;
    if (cli.isSet("labels")) {
        // Experiments on one labelling: the teacher's tracks of an earlier session, as they were.
        labels = vision::LabelResult::load(cli.text("labels"));
        if (labelOptions.max_frames > 0 && labels.stats.frames > labelOptions.max_frames)
            throw UsageError("--labels " + cli.text("labels") + " labelled " +
                             std::to_string(labels.stats.frames) +
                             " frames, more than --max-frames " +
                             std::to_string(labelOptions.max_frames));
        labels.options.max_frames = labelOptions.max_frames; // self-training stays within
        cli.message("labels of " + cli.text("labels") + ": " + std::to_string(labels.stats.tracks) +
                    " tracks, " + std::to_string(labels.stats.teacher_boxes) + " teacher boxes");
    } else {
        labels = label(cli, *source, *teacher, labelOptions, out);
    }
    labels.save(out);
    requireWhole(labels, out);
    core::Json j = labelJson(labels);
    j.set("command", "viewpoint").set("session", out).set("student", "frames");
    core::Json roundsJson = core::Json::array();
    std::shared_ptr<core::Model> model;
    std::vector<std::string> roundWeights;
    for (int round = 1; round <= rounds; ++round) {
        core::Json rj;
        rj.set("round", round);
        if (round > 1) {
            vision::SelfTrainOptions st;
            st.threshold = float(cli.number("self-threshold", 0.05, 0.99));
            st.label = labelOptions;
            const auto added = vision::FrameStudentTrainer::relabel(
                labels, *source, *model, st,
                [&](int f, int n, const vision::LabelStats &) {
                    cli.progress("self-training: frame " + std::to_string(f) + "/" +
                                 std::to_string(n));
                },
                CliContext::stopFlag());
            cli.progressDone();
            labels.round = round;
            labels.save(out);
            char line[200];
            std::snprintf(line, sizeof line,
                          "self-training: the student's run found %d tracks; %d new, %d student "
                          "boxes and %d tracker boxes join the labels (%.1f s)",
                          added.tracks, added.new_tracks, added.student_boxes, added.tracker_boxes,
                          added.seconds);
            cli.message(line);
            rj.set("student_boxes_added", added.student_boxes)
                .set("tracker_boxes_added", added.tracker_boxes)
                .set("tracks_added", added.new_tracks);
        }
        const auto stats = vision::FrameDataset::build(
            out, labels, *source, d,
            [&](int f, int n) {
                cli.progress("frame dataset: frame " + std::to_string(f) + "/" + std::to_string(n));
            },
            CliContext::stopFlag());
        cli.progressDone();
        char line[300];
        std::snprintf(line, sizeof line,
                      "frame dataset %dx%d, every %d frames: train %d frames (%d samples, %d "
                      "objects, %d ignore), validation %d frames (%d objects), %d backgrounds, "
                      "%.1f s",
                      stats.input.width, stats.input.height, stats.every, stats.frames[0],
                      stats.samples[0], stats.objects[0], stats.ignores[0], stats.frames[1],
                      stats.objects[1], stats.backgrounds, stats.seconds);
        cli.message(line);
        if (stats.same_object > 0) {
            std::snprintf(line, sizeof line,
                          "%d label boxes became ignore regions: the second box of an object "
                          "boxed twice (the teacher at two scales, two tracks on one object), "
                          "or boxes of very different sizes disagreeing on one spot",
                          stats.same_object);
            cli.message(line);
        }
        const vision::GroundPlane &g = stats.ground;
        if (g.usable)
            std::snprintf(line, sizeof line,
                          "pasted %d objects (%d cut out) onto training copies at the ground "
                          "plane's sizes: height %.3f x bottom row %+.1f px (R^2 %.2f), from %d "
                          "boxes",
                          stats.pasted, stats.cutouts, g.slope, g.offset, g.r2, g.boxes);
        else if (!labels.cuts.empty())
            std::snprintf(line, sizeof line,
                          "no objects pasted: the video has %d scene cuts (no one fixed view)",
                          int(labels.cuts.size()));
        else
            std::snprintf(line, sizeof line,
                          "no objects pasted: the labels show no ground plane (%d boxes, slope "
                          "%.3f, R^2 %.2f)",
                          g.boxes, g.slope, g.r2);
        cli.message(line);
        core::Json dj;
        dj.set("width", stats.input.width).set("height", stats.input.height);
        dj.set("pasted_objects", stats.pasted).set("cutouts", stats.cutouts);
        dj.set("same_object_ignored", stats.same_object);
        dj.set("ground_plane_usable", g.usable).set("ground_plane_slope", g.slope);
        dj.set("ground_plane_offset", g.offset).set("ground_plane_r2", g.r2);
        dj.set("every", stats.every).set("train_frames", stats.frames[0]);
        dj.set("train_samples", stats.samples[0]).set("train_objects", stats.objects[0]);
        dj.set("val_frames", stats.frames[1]).set("val_objects", stats.objects[1]);
        rj.set("dataset", std::move(dj));
        if (!model)
            model =
                std::make_shared<core::Model>(vision::FrameStudentTrainer::spec(stats.input), seed);
        const int roundEpochs = round == 1 ? epochs : std::max(1, epochs / 2);
        vision::FrameTrainOptions rt = t;
        rt.epochs = roundEpochs;
        if (round > 1)
            rt.lr = t.lr / 2; // from the first round's weights
        cli.message("round " + std::to_string(round) + ": training the detector (" +
                    std::to_string(model->parameterCount()) + " parameters) for " +
                    std::to_string(roundEpochs) + " epochs");
        core::Trainer::Callbacks callbacks;
        callbacks.onEpoch = [&](const core::EpochStats &e) {
            char l[200];
            std::snprintf(l, sizeof l,
                          "round %d epoch %d/%d: loss %.4f, centre recall %.1f%%, validation "
                          "loss %.4f, centre recall %s (%.1f s)",
                          round, e.epoch, roundEpochs, e.train_loss, 100 * e.train_accuracy,
                          e.test_loss,
                          e.test_accuracy < 0 ? "n/a" : formatPercent(e.test_accuracy).c_str(),
                          e.train_seconds);
            cli.message(l);
        };
        const auto trained =
            vision::FrameStudentTrainer::train(*model, out, rt, callbacks, CliContext::stopFlag());
        if (trained.cancelled)
            throw core::Error("cancelled while training the detector");
        const std::string weights =
            out + "/detector-round" + std::to_string(round) + ".safetensors";
        core::Safetensors::saveModel(*model, weights);
        roundWeights.push_back(weights);
        if (!trained.epochs.empty()) {
            rj.set("train_loss", trained.epochs.back().train_loss)
                .set("train_centre_recall", trained.epochs.back().train_accuracy)
                .set("validation_centre_recall", trained.epochs.back().test_accuracy);
        }
        const int best = vision::FrameStudentTrainer::bestEpoch(trained);
        const int ran = int(trained.epochs.size());
        if (best > 0)
            cli.message("round " + std::to_string(round) + ": kept the weights of epoch " +
                        std::to_string(best) + " (lowest validation loss)" +
                        (t.average_decay > 0 ? ", their moving average" : "") +
                        (ran < rt.epochs ? "; ended after epoch " + std::to_string(ran) + " of " +
                                               std::to_string(rt.epochs) + ": none lower in " +
                                               std::to_string(t.patience)
                                         : std::string()));
        rj.set("best_epoch", best).set("average_decay", t.average_decay);
        rj.set("epochs_trained", ran).set("patience", t.patience);
        rj.set("epochs", roundEpochs).set("train_seconds", trained.train_seconds);
        roundsJson.push(std::move(rj));
    }
    if (autoThreshold) {
        // The operating point: the best F1 against the session's labels on the frames it
        // trained on (never the held-out ones, never the verified ones).
        vision::StudentTeacher student(model);
        vision::OperatingPointCalibration::Options o;
        o.iou = cli.number("match-iou", 0.1, 0.95);
        if (const auto built = vision::FrameDataset::stats(out))
            o.plane = built->ground;
        const vision::OperatingPoint p = vision::OperatingPointCalibration::calibrate(
            *source, student, labels, o,
            [&](int done, int total) {
                cli.progress("operating point: frame " + std::to_string(done) + "/" +
                             std::to_string(total));
            },
            CliContext::stopFlag());
        cli.progressDone();
        studentThreshold = p.threshold;
        char line[200];
        std::snprintf(line, sizeof line,
                      "student threshold %.3f: the best F1 (%.3f: recall %.3f, precision %.3f) "
                      "against the session's labels on %d training frames (%d boxes)",
                      double(p.threshold), p.f1, p.recall, p.precision, p.frames, p.boxes);
        cli.message(line);
        core::Json pj;
        pj.set("threshold", double(p.threshold)).set("f1", p.f1).set("recall", p.recall);
        pj.set("precision", p.precision).set("frames", p.frames).set("boxes", p.boxes);
        pj.set("against", "labels");
        j.set("operating_point", std::move(pj));
    }
    j.set("student_threshold", double(studentThreshold));
    vision::FrameStudent::saveModel(*model, vision::StudentTeacher::weightsPath(out),
                                    studentThreshold);
    j.set("rounds", roundsJson);
    j.set("student_weights", vision::StudentTeacher::weightsPath(out));

    // Verified frames: teacher, motion and every round's student, on the same frames.
    vision::GroundTruth truth = loadTruth(cli, out, *source);
    if (evalSpan == "seen" && labelOptions.max_frames > 0) {
        // Tuning: the frames >= max-frames are neither run nor scored.
        std::vector<vision::TruthFrame> seen;
        for (const vision::TruthFrame &f : truth.frames)
            if (f.index < labelOptions.max_frames)
                seen.push_back(f);
        truth.frames = std::move(seen);
    }
    if (!truth.frames.empty()) {
        std::set<int> frames;
        for (const vision::TruthFrame &f : truth.frames)
            frames.insert(f.index);
        auto evalTeacher = vision::Teacher::create(cli.text("teacher"));
        evalTeacher->threshold = teacher->threshold;
        auto motion = vision::Teacher::create("motion");
        std::vector<std::unique_ptr<vision::StudentTeacher>> students;
        std::vector<vision::Teacher *> detectors{evalTeacher.get(), motion.get()};
        for (const std::string &w : roundWeights) {
            students.push_back(std::make_unique<vision::StudentTeacher>(
                std::shared_ptr<core::Model>(vision::FrameStudent::loadModel(w))));
            students.back()->threshold = 0.05f; // the whole curve; scored at studentThreshold
            detectors.push_back(students.back().get());
        }
        cli.message("evaluating teacher, motion and student on " + std::to_string(frames.size()) +
                    " verified frames");
        const auto run = vision::DetectionRun::run(
            *source, detectors, frames,
            [&](int done, int total) {
                cli.progress("verified frame " + std::to_string(done) + "/" +
                             std::to_string(total));
            },
            CliContext::stopFlag());
        cli.progressDone();
        const int split = labelOptions.max_frames;
        auto scoreAll = [&](int first, int last, const char *what) {
            vision::MetricsOptions m;
            m.iou = cli.number("match-iou", 0.1, 0.95);
            m.first_frame = first;
            m.last_frame = last;
            core::Json v;
            int n = 0;
            for (const vision::TruthFrame &f : truth.frames)
                n += f.index >= first && f.index <= last;
            v.set("frames", n).set("iou", m.iou);
            if (n == 0)
                return v;
            cli.message(std::string("verified frames ") + what + " (" + std::to_string(n) +
                        " frames, IoU " + std::to_string(m.iou).substr(0, 4) + "):");
            const auto teacherScore =
                vision::DetectionMetrics::evaluate("teacher", run.detections[0], truth, m);
            const auto motionScore =
                vision::DetectionMetrics::evaluate("motion", run.detections[1], truth, m);
            cli.message(scoreLine(teacherScore));
            cli.message(scoreLine(motionScore));
            v.set("teacher", scoreJson(teacherScore)).set("motion", scoreJson(motionScore));
            m.threshold = studentThreshold;
            core::Json perRound = core::Json::array();
            for (std::size_t r = 0; r < students.size(); ++r) {
                const auto s = vision::DetectionMetrics::evaluate(
                    "student r" + std::to_string(r + 1), run.detections[2 + r], truth, m);
                cli.message(scoreLine(s));
                perRound.push(scoreJson(s).set("round", int(r + 1)));
                if (r + 1 == students.size())
                    v.set("student", scoreJson(s));
            }
            v.set("rounds", std::move(perRound));
            return v;
        };
        core::Json verified = split <= 0 ? scoreAll(0, INT_MAX, "(all)")
                              : evalSpan == "seen"
                                  ? core::Json::object()
                                  : scoreAll(split, INT_MAX, ">= max-frames (held out)");
        if (split > 0)
            verified.set("seen", scoreAll(0, split - 1, "< max-frames (seen in training)"));
        core::Json fps;
        const char *names[] = {"teacher", "motion"};
        for (std::size_t i = 0; i < run.detect_seconds.size(); ++i)
            fps.set(i < 2 ? names[i] : "student_r" + std::to_string(i - 1),
                    run.detect_seconds[i] > 0 ? run.frames / run.detect_seconds[i] : 0.0);
        verified.set("detect_fps", std::move(fps));
        j.set("verified", std::move(verified));
    } else {
        cli.message("no verified frames (--truth, or truth.json in the session): the student is "
                    "not evaluated against ground truth");
    }
    j.set("seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    writeAtomically(out + "/report.json", j.dump(1) + "\n");
    cli.message("report written to " + out + "/report.json");
    if (cli.json())
        cli.printJson(j);
    return ExitSuccess;
}

} // namespace

int DatasetCommand::run(const QStringList &arguments)
{
    CliContext cli(
        QStringLiteral("dataset"),
        QStringLiteral("Cut the student's training crops from a labelled session: positives from "
                       "accepted tracks, background negatives, split by track."),
        arguments);
    cli.addOption("session", "Session folder (from `label`).", "DIR");
    cli.addOption("size", "Crop size WxH (the student's input).", "WxH", "24x48");
    cli.addOption("seed", "Seed of the split and the negatives.", "N", "1");
    if (!cli.parse())
        return ExitSuccess;
    const std::string session = required(cli, "session");
    vision::CropOptions o;
    o.size = parseSize(cli.text("size"));
    o.seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    const auto labels = vision::LabelResult::load(session);
    auto source = vision::FrameSource::open(labels.source);
    CliContext::installStopHandler();
    const auto stats = buildDataset(cli, session, labels, *source, o);
    if (cli.json())
        cli.printJson(datasetJson(stats, o.size).set("command", "dataset").set("session", session));
    return ExitSuccess;
}

int ViewpointCommand::run(const QStringList &arguments)
{
    CliContext cli(
        QStringLiteral("viewpoint"),
        QStringLiteral(
            "The whole viewpoint adaptation: label the video, cut the dataset, train the "
            "student here, and compare student and teacher on held-out tracks, "
            "separately for boxes the teacher found and boxes only the tracker found."),
        arguments);
    addLabelOptions(cli);
    cli.addOption("size", "Crop size WxH (the student's input).", "WxH", "24x48");
    cli.addOption("student",
                  "frames (a full-frame detector, one pass per frame) or crops (the crop "
                  "classifier slid over the frame).",
                  "KIND", "frames");
    cli.addOption("epochs", "Student training epochs (crops: 12, frames: 40).", "N");
    cli.addOption("eval-frames", "crops: frames with held-out boxes to evaluate on.", "N", "30");
    cli.addOption("seed", "Seed of the split, the negatives and the student.", "N", "1");
    cli.addOption("rounds",
                  "frames: training rounds (2 or more: self-training; on vtest.avi a second round "
                  "added nothing on the verified frames < 480).",
                  "N", "1");
    cli.addOption("lr", "frames: peak learning rate (cosine).", "X", "0.02");
    cli.addOption("batch", "frames: batch size.", "N", "12");
    cli.addOption("width", "frames: detector input width (height from the aspect).", "PX", "256");
    cli.addOption("sample-every", "frames: every K-th frame (0: within the 300 MB budget).", "K",
                  "2");
    cli.addOption("keep",
                  "frames: the weights kept, best (the epoch with the lowest validation "
                  "loss) or last.",
                  "WHICH", "best");
    cli.addOption("patience",
                  "frames: with --keep best, end training once this many epochs in a row have "
                  "not lowered the validation loss (0: every epoch).",
                  "N", "10");
    cli.addOption("average",
                  "frames: decay of the moving average of the weights over the steps "
                  "(0: none; 0.99: about the last 100 steps).",
                  "D", "0");
    cli.addOption("augment",
                  "frames: jittered copies per training frame (flip, scale 0.7-2.4, "
                  "shift, colour).",
                  "N", "4");
    cli.addOption("student-threshold",
                  "frames: the student's operating threshold, or auto: the best F1 against "
                  "the session's labels on the training frames.",
                  "X", "auto");
    cli.addOption("labels",
                  "frames: reuse the labels.json of this session instead of labelling "
                  "(it must have the same --max-frames).",
                  "DIR");
    cli.addOption("eval",
                  "frames: verified frames scored: all, or seen (only those < "
                  "max-frames, for tuning).",
                  "SPAN", "all");
    cli.addOption("self-threshold", "frames: the student's boxes trusted in self-training.", "X",
                  "0.5");
    cli.addOption("truth", "Verified boxes (MOT gt.txt) to score teacher, motion and student.",
                  "FILE");
    cli.addOption("truth-frames",
                  "The verified frames (one index a line; default: the frames "
                  "in --truth).",
                  "FILE");
    cli.addOption("match-iou", "IoU for a detection to match a verified box.", "X", "0.5");
    if (!cli.parse())
        return ExitSuccess;
    const std::string sourceSpec = required(cli, "source");
    const std::string out = sessionFolder(cli);
    const std::string kind = cli.text("student");
    if (kind != "frames" && kind != "crops")
        throw UsageError("--student must be frames or crops, not '" + kind + "'");
    if (kind == "frames") {
        auto lo = labelOptions(cli);
        // The full-frame student learns every person its labels miss as background: the teacher
        // on every 2nd frame (not 10th) labels ~0.73 of the people on the verified frames < 480
        // of vtest.avi instead of ~0.45 (tests/data/vtest), for 77 s of labelling instead of 7.
        if (!cli.isSet("every"))
            lo.every = 2;
        try {
            (void)vision::createTracker(lo.tracker);
        } catch (const core::SpecError &e) {
            throw UsageError(e.what());
        }
        return runFrameViewpoint(cli, sourceSpec, out, lo);
    }
    vision::ViewpointOptions o;
    o.label = labelOptions(cli);
    o.crops.size = parseSize(cli.text("size"));
    o.crops.seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    o.epochs = cli.isSet("epochs") ? int(cli.integer("epochs", 1, 1000)) : 12;
    o.eval_frames = int(cli.integer("eval-frames", 1, 100000));
    try {
        (void)vision::createTracker(o.label.tracker);
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
    auto teacher = makeTeacher(cli);
    auto source = vision::FrameSource::open(sourceSpec);
    const auto t0 = std::chrono::steady_clock::now();

    // 1. label
    const auto labels = label(cli, *source, *teacher, o.label, out);
    requireWhole(labels, out);
    // 2. dataset
    const auto crops = buildDataset(cli, out, labels, *source, o.crops);
    // 3. student
    core::Model student(core::Zoo::spec("student").withInputShape(
                            core::Shape{3, o.crops.size.height, o.crops.size.width}),
                        o.crops.seed);
    cli.message("training the student (" + std::to_string(student.parameterCount()) +
                " parameters) for " + std::to_string(o.epochs) + " epochs");
    core::Trainer::Callbacks callbacks;
    callbacks.onEpoch = [&](const core::EpochStats &e) {
        char line[160];
        std::snprintf(
            line, sizeof line,
            "student epoch %d/%d: train loss %.4f, train accuracy %.1f%%, validation accuracy %s",
            e.epoch, o.epochs, e.train_loss, 100 * e.train_accuracy,
            e.test_accuracy < 0 ? "n/a" : formatPercent(e.test_accuracy).c_str());
        cli.message(line);
    };
    const auto trained =
        vision::Viewpoint::trainStudent(student, out, o, callbacks, CliContext::stopFlag());
    if (trained.cancelled)
        throw core::Error("cancelled while training the student");
    core::Safetensors::saveModel(student, out + "/student.safetensors");
    // 4. evaluate
    cli.message("evaluating teacher and student on held-out tracks");
    vision::StudentDetector detector(student);
    const auto splits = vision::CropDataset::splitTracks(labels, o.crops);
    const auto e = vision::Viewpoint::evaluate(*source, *teacher, detector, labels, splits, o,
                                               CliContext::stopFlag());
    char line[400];
    std::snprintf(
        line, sizeof line,
        "held-out: %d frames, %d teacher-found boxes, %d tracker-only boxes\n"
        "  recall on teacher-found boxes:  teacher %.3f, student %.3f\n"
        "  recall on tracker-only boxes:   teacher %.3f, student %.3f   <- the viewpoint gain\n"
        "  precision: student %.3f (%d detections), teacher %.3f (%d detections)",
        e.frames, e.teacher_found_boxes, e.tracker_only_boxes, e.teacher_recall_teacher_found,
        e.student_recall_teacher_found, e.teacher_recall_tracker_only,
        e.student_recall_tracker_only, e.student_precision, e.student_detections,
        e.teacher_precision, e.teacher_detections);
    cli.message(line);

    core::Json j = labelJson(labels);
    j.set("command", "viewpoint").set("session", out);
    j.set("dataset", datasetJson(crops, o.crops.size));
    j.set("student_epochs", o.epochs);
    if (!trained.epochs.empty())
        j.set("student_validation_accuracy", trained.epochs.back().test_accuracy)
            .set("student_train_accuracy", trained.epochs.back().train_accuracy);
    j.set("eval_frames", e.frames).set("eval_teacher_found_boxes", e.teacher_found_boxes);
    j.set("eval_tracker_only_boxes", e.tracker_only_boxes).set("match_iou", e.match_iou);
    j.set("teacher_recall_teacher_found", e.teacher_recall_teacher_found);
    j.set("student_recall_teacher_found", e.student_recall_teacher_found);
    j.set("teacher_recall_tracker_only", e.teacher_recall_tracker_only);
    j.set("student_recall_tracker_only", e.student_recall_tracker_only);
    j.set("student_precision", e.student_precision).set("teacher_precision", e.teacher_precision);
    j.set("seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    j.set("student_weights", out + "/student.safetensors");
    writeAtomically(out + "/report.json", j.dump(1) + "\n");
    cli.message("report written to " + out + "/report.json");
    if (cli.json())
        cli.printJson(j);
    return ExitSuccess;
}

} // namespace edgetrain::app
