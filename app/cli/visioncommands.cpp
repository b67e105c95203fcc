#include "visioncommands.h"

#include "clicontext.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "vision/cropdataset.h"
#include "vision/labeling.h"
#include "vision/studentdetector.h"
#include "vision/tracking.h"
#include "vision/viewpoint.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace edgetrain::app {

namespace {

void addLabelOptions(CliContext &cli)
{
    cli.addOption("source", "Video file, camera:N (V4L2) or a folder of images.", "S");
    cli.addOption("teacher",
                  "hog, cascade:FILE (Haar/LBP), onnx:FILE (SSD- or YOLO-style head), motion "
                  "(background subtraction, fixed camera) or DETECTOR+motion (e.g. hog+motion); "
                  "a detector takes ?box=dx0,dy0,dx1,dy1 to correct its boxes' edges.",
                  "T", "hog");
    cli.addOption("threshold", "Teacher score threshold.", "X", "0");
    cli.addOption("tracker", "csrt, kcf, mil, mosse or medianflow.", "NAME", "kcf");
    cli.addOption("every", "Run the teacher on every K-th frame.", "K", "10");
    cli.addOption("backward", "How many frames a new object is followed back.", "N", "75");
    cli.addOption("max-frames", "Label only the first N frames (0: all).", "N", "0");
    cli.addOption("out", "Session folder (created; labels.json is written there).", "DIR");
}

vision::LabelOptions labelOptions(const CliContext &cli)
{
    vision::LabelOptions o;
    o.tracker = cli.text("tracker");
    o.every = int(cli.integer("every", 1, 10000));
    o.backward_frames = int(cli.integer("backward", 0, 1000));
    o.max_frames = int(cli.integer("max-frames", 0, 100000000));
    return o;
}

std::unique_ptr<vision::Teacher> makeTeacher(const CliContext &cli)
{
    try {
        auto t = vision::Teacher::create(cli.text("teacher"));
        t->threshold = float(cli.number("threshold", -1e6, 1e6));
        return t;
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
}

std::string required(const CliContext &cli, const char *option)
{
    if (!cli.isSet(option) || cli.text(option).empty())
        throw UsageError(std::string("--") + option + " is required");
    return cli.text(option);
}

cv::Size parseSize(const std::string &text)
{
    int w = 0, h = 0;
    char x = 0;
    if (std::sscanf(text.c_str(), "%d%c%d", &w, &x, &h) != 3 || x != 'x' || w < 8 || h < 8 ||
        w > 512 || h > 512)
        throw UsageError("--size must be WxH between 8x8 and 512x512, like 24x48, got '" + text +
                         "'");
    return {w, h};
}

vision::LabelResult label(CliContext &cli, vision::FrameSource &source, vision::Teacher &teacher,
                          const vision::LabelOptions &o)
{
    cli.message("labelling " + source.description() + " (" +
                std::to_string(source.frameSize().width) + "x" +
                std::to_string(source.frameSize().height) + ", " +
                (source.frameCount() > 0 ? std::to_string(source.frameCount()) + " frames"
                                         : std::string("live")) +
                ") with teacher " + teacher.name() + " every " + std::to_string(o.every) +
                " frames, tracker " + o.tracker);
    CliContext::installStopHandler();
    const auto start = std::chrono::steady_clock::now();
    const auto r = vision::Labeler::run(
        source, teacher, o,
        [&](int f, int n, const vision::LabelStats &s) {
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            char line[200];
            std::snprintf(line, sizeof line, "frame %d/%d  teacher detections %d  %.1f fps", f, n,
                          s.teacher_detections, seconds > 0 ? s.frames / seconds : 0.0);
            cli.progress(line);
        },
        CliContext::stopFlag());
    cli.progressDone();
    char line[240];
    std::snprintf(line, sizeof line,
                  "%d frames in %.1f s (%.1f fps): %d tracks (%d rejected), %d teacher boxes, %d "
                  "tracker-only "
                  "boxes, %d drift stops, %zu scene cuts",
                  r.stats.frames, r.stats.seconds, r.stats.fps, r.stats.tracks,
                  r.stats.rejected_tracks, r.stats.teacher_boxes, r.stats.tracker_only_boxes,
                  r.stats.drift_stops, r.cuts.size());
    cli.message(line);
    return r;
}

core::Json labelJson(const vision::LabelResult &r)
{
    core::Json j;
    j.set("source", r.source).set("teacher", r.teacher).set("tracker", r.options.tracker);
    j.set("every", r.options.every).set("frames", r.stats.frames);
    j.set("teacher_boxes", r.stats.teacher_boxes)
        .set("tracker_only_boxes", r.stats.tracker_only_boxes);
    j.set("tracks", r.stats.tracks).set("rejected_tracks", r.stats.rejected_tracks);
    j.set("drift_stops", r.stats.drift_stops)
        .set("label_fps", r.stats.fps)
        .set("label_seconds", r.stats.seconds);
    core::Json cuts = core::Json::array();
    for (int c : r.cuts)
        cuts.push(c);
    j.set("cuts", std::move(cuts));
    core::Json list = core::Json::array();
    for (const auto &t : r.tracks) {
        core::Json jt;
        jt.set("id", t.id)
            .set("state", t.state == vision::Track::State::Accepted ? "accepted" : "rejected");
        jt.set("boxes", int(t.boxes.size()))
            .set("teacher_boxes", t.teacherBoxes())
            .set("tracker_boxes", t.trackerBoxes());
        jt.set("first_frame", t.boxes.empty() ? -1 : t.boxes.front().frame);
        jt.set("last_frame", t.boxes.empty() ? -1 : t.boxes.back().frame);
        if (!t.note.empty())
            jt.set("note", t.note);
        list.push(std::move(jt));
    }
    j.set("track_list", std::move(list));
    return j;
}

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

} // namespace

int LabelCommand::run(const QStringList &arguments)
{
    CliContext cli(
        QStringLiteral("label"),
        QStringLiteral("Label a video: the teacher runs every K-th frame, a tracker carries its "
                       "boxes backwards and forwards into the frames where it fails; tracks are "
                       "written to the session folder."),
        arguments);
    addLabelOptions(cli);
    if (!cli.parse())
        return ExitSuccess;
    const std::string sourceSpec = required(cli, "source");
    const std::string out = required(cli, "out");
    const auto options = labelOptions(cli);
    try {
        (void)vision::createTracker(options.tracker);
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
    auto teacher = makeTeacher(cli);
    auto source = vision::FrameSource::open(sourceSpec);
    const auto r = label(cli, *source, *teacher, options);
    r.save(out);
    cli.message("tracks written to " + out + "/labels.json");
    if (cli.json())
        cli.printJson(labelJson(r).set("command", "label").set("session", out));
    return r.cancelled ? ExitFailure : ExitSuccess;
}

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
    cli.addOption("epochs", "Student training epochs.", "N", "12");
    cli.addOption("eval-frames", "Frames with held-out boxes to evaluate on.", "N", "30");
    cli.addOption("seed", "Seed of the split, the negatives and the student.", "N", "1");
    if (!cli.parse())
        return ExitSuccess;
    const std::string sourceSpec = required(cli, "source");
    const std::string out = required(cli, "out");
    vision::ViewpointOptions o;
    o.label = labelOptions(cli);
    o.crops.size = parseSize(cli.text("size"));
    o.crops.seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    o.epochs = int(cli.integer("epochs", 1, 1000));
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
    const auto labels = label(cli, *source, *teacher, o.label);
    labels.save(out);
    if (labels.cancelled)
        throw core::Error("cancelled while labelling (the tracks so far are in " + out +
                          "/labels.json)");
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
