#include "visioncommands.h"

#include "app/session/verifiedframes.h"
#include "app/session/viewpointpipeline.h"
#include "clicontext.h"
#include "clustertrain.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "labelcommand.h"
#include "tilingoptions.h"
#include "vision/cropdataset.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"
#include "vision/studentdetector.h"
#include "vision/tracking.h"
#include "vision/viewpoint.h"

#include <QLoggingCategory>

#include <chrono>
#include <cstdio>
#include <filesystem>

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

/** --truth (MOT gt.txt) with --truth-frames, or the session's truth.json. Empty when there is
 *  neither. */
vision::GroundTruth loadTruth(const CliContext &cli, const std::string &session,
                              const std::string &sourceSpec)
{
    if (!cli.isSet("truth")) {
        if (vision::GroundTruth::exists(session))
            return vision::GroundTruth::load(session).doneOnly();
        return {};
    }
    auto source = vision::FrameSource::open(sourceSpec);
    return readVerifiedTruth(cli.text("truth"),
                             cli.isSet("truth-frames") ? cli.text("truth-frames") : std::string(),
                             *source)
        .doneOnly();
}

/** The viewpoint's full-frame student through the session's pipeline: flags in, lines and
 *  the report out. */
ViewpointPipelineOptions frameViewpointOptions(CliContext &cli, const std::string &sourceSpec,
                                               const std::string &out,
                                               const vision::LabelOptions &labelOptions)
{
    ViewpointPipelineOptions o;
    o.source = sourceSpec;
    o.sessionDir = out;
    o.label = labelOptions;
    const int epochs = cli.isSet("epochs") ? int(cli.integer("epochs", 1, 1000)) : 40;
    o.rounds = int(cli.integer("rounds", 1, 5));
    if (cli.text("student-threshold") != "auto")
        o.studentThreshold = float(cli.number("student-threshold", 0.01, 0.99));
    const std::string evalSpan = cli.text("eval");
    if (evalSpan != "all" && evalSpan != "seen")
        throw UsageError("--eval must be all or seen, not '" + evalSpan + "'");
    o.seenOnly = evalSpan == "seen";
    o.matchIou = cli.number("match-iou", 0.1, 0.95);
    o.selfThreshold = float(cli.number("self-threshold", 0.05, 0.99));
    const std::uint64_t seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    o.dataset.width = int(cli.integer("width", 64, 1024));
    o.dataset.every = int(cli.integer("sample-every", 0, 10000));
    o.dataset.max_frame = labelOptions.max_frames;
    o.dataset.augmented = int(cli.integer("augment", 0, 10));
    o.dataset.seed = seed;
    o.train.epochs = epochs;
    o.train.lr = cli.number("lr", 1e-5, 1.0);
    o.train.batch = cli.integer("batch", 2, 256);
    o.train.seed = seed;
    const std::string keep = cli.text("keep");
    if (keep != "best" && keep != "last")
        throw UsageError("--keep must be best or last, not '" + keep + "'");
    o.train.keep_best = keep == "best";
    o.train.average_decay = cli.number("average", 0.0, 0.9999);
    o.train.patience = int(cli.integer("patience", 0, 100000));
    const auto teacher = makeTeacher(cli); // a teacher it does not know is a usage error
    o.teacher = cli.text("teacher");
    o.teacherThreshold = teacher->threshold;
    if (cli.isSet("labels")) {
        // Experiments on one labelling: the teacher's tracks of an earlier session, as they were.
        o.labels = vision::LabelResult::load(cli.text("labels"));
        if (labelOptions.max_frames > 0 && o.labels->stats.frames > labelOptions.max_frames)
            throw UsageError("--labels " + cli.text("labels") + " labelled " +
                             std::to_string(o.labels->stats.frames) +
                             " frames, more than --max-frames " +
                             std::to_string(labelOptions.max_frames));
    }
    if (wantsCluster(cli))
        o.cluster = clusterOptions(cli);
    o.tiling = tilingRequest(cli);
    o.truth = loadTruth(cli, out, sourceSpec);
    return o;
}

int runFrameViewpoint(CliContext &cli, const std::string &sourceSpec, const std::string &out,
                      const vision::LabelOptions &labelOptions)
{
    const ViewpointPipelineOptions o = frameViewpointOptions(cli, sourceSpec, out, labelOptions);
    if (o.labels)
        cli.message("labels of " + cli.text("labels") + ": " +
                    std::to_string(o.labels->stats.tracks) + " tracks, " +
                    std::to_string(o.labels->stats.teacher_boxes) + " teacher boxes");
    else
        announceLabelling(cli, *vision::FrameSource::open(sourceSpec), *makeTeacher(cli),
                          labelOptions);
    ViewpointCallbacks callbacks;
    callbacks.message = [&](const std::string &line) {
        cli.progressDone();
        cli.message(line);
    };
    callbacks.progress = [&](int, int, const QString &text) { cli.progress(text.toStdString()); };
    const auto start = std::chrono::steady_clock::now();
    callbacks.labelProgress = [&](int f, int n, const vision::LabelStats &s) {
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char line[200];
        std::snprintf(line, sizeof line, "frame %d/%d  teacher detections %d  %.1f fps", f, n,
                      s.teacher_detections, seconds > 0 ? s.frames / seconds : 0.0);
        cli.progress(line);
    };
    callbacks.labelled = [&](const vision::LabelResult &labels) {
        cli.progressDone();
        reportLabelling(cli, labels, out);
    };
    if (o.cluster) // the coordinator's log says what the printed lines say already
        QLoggingCategory::setFilterRules(
            QStringLiteral("edgetrain.coordinator.info=false\nedgetrain.coordinator.debug=false"));
    CliContext::installStopHandler();
    const ViewpointResult result = runViewpointPipeline(o, callbacks, CliContext::stopFlag());
    cli.progressDone();
    core::Json j = labelJson(result.labels);
    j.set("command", "viewpoint").set("session", out);
    for (const auto &[key, value] : result.report.toObject())
        j.set(key, value);
    core::writeFileAtomically(out + "/report.json", j.dump(1) + "\n");
    cli.message("report written to " + out + "/report.json");
    if (cli.json())
        cli.printJson(j);
    return ExitSuccess;
}

/** viewpoint's options: label's, the student's, the verified frames', the nodes'. */
void addViewpointOptions(CliContext &cli)
{
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
                  "frames: the student's operating threshold, or auto: the best F0.5 "
                  "(precision first) against the session's labels on the training frames.",
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
    cli.addOption("match-iou",
                  "IoU for a detection to match a verified box (the student's operating "
                  "threshold is calibrated at 0.5 whatever this is).",
                  "X", "0.5");
    // frames: the detector trains on nodes as the window's Train step trains it.
    addNodeOptions(cli, QStringLiteral("5s"));
}

/** viewpoint --student crops: label, crops, the crop student trained here, held-out tracks. */
int runCropViewpoint(CliContext &cli, const std::string &sourceSpec, const std::string &out);

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
            "student here or on nodes (--nodes, --discover), and score student and teacher: "
            "the full-frame student against verified frames, the crop student on held-out "
            "tracks, separately for boxes the teacher found and boxes only the tracker found."),
        arguments);
    addViewpointOptions(cli);
    if (!cli.parse())
        return ExitSuccess;
    const std::string sourceSpec = required(cli, "source");
    const std::string kind = cli.text("student");
    if (kind != "frames" && kind != "crops")
        throw UsageError("--student must be frames or crops, not '" + kind + "'");
    if (kind == "crops" && wantsCluster(cli))
        throw UsageError("--nodes and --discover train the full-frame student (--student frames)");
    const std::string out = sessionFolder(cli);
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
    return runCropViewpoint(cli, sourceSpec, out);
}

namespace {

int runCropViewpoint(CliContext &cli, const std::string &sourceSpec, const std::string &out)
{
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
    core::writeFileAtomically(out + "/report.json", j.dump(1) + "\n");
    cli.message("report written to " + out + "/report.json");
    if (cli.json())
        cli.printJson(j);
    return ExitSuccess;
}

} // namespace

} // namespace edgetrain::app
