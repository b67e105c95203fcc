#include "labelcommand.h"

#include "app/session/labeltask.h"
#include "clicontext.h"
#include "core/error.h"
#include "vision/tracking.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace edgetrain::app {

void addLabelOptions(CliContext &cli)
{
    cli.addOption("source", "Video file, camera:N (V4L2) or a folder of images.", "S");
    cli.addOption("teacher",
                  "hog, cascade:FILE (Haar/LBP), onnx:FILE (SSD- or YOLO-style head, or a "
                  "student edgetrain-cli export wrote), session:DIR (a session's student), motion "
                  "(background subtraction, fixed camera) or DETECTOR+motion (e.g. hog+motion); "
                  "a detector takes ?box=dx0,dy0,dx1,dy1 to correct its boxes' edges, and "
                  "?verify=DETECTOR for a second opinion: tracks it never confirms are rejected.",
                  "T", "hog");
    cli.addOption("threshold",
                  "Teacher score threshold (default: the teacher's own, 0 but for a trained "
                  "student: its operating threshold).",
                  "X");
    cli.addOption("tracker", "csrt, kcf, mil, mosse or medianflow.", "NAME", "kcf");
    cli.addOption("every", "Run the teacher on every K-th frame (viewpoint --student frames: 2).",
                  "K", "10");
    cli.addOption("backward", "How many frames a new object is followed back.", "N", "75");
    cli.addOption("max-frames", "Label only the first N frames (0: all).", "N", "0");
    cli.addOption("min-teacher-share",
                  "Reject tracks the teacher confirmed in fewer than this share of its runs over "
                  "the track's frames (their boxes become ignore regions).",
                  "X", "0.2");
    cli.addOption("out", "Session folder (created; labels.json is written there).", "DIR");
}

vision::LabelOptions labelOptions(const CliContext &cli)
{
    vision::LabelOptions o;
    o.tracker = cli.text("tracker");
    o.every = int(cli.integer("every", 1, 10000));
    o.backward_frames = int(cli.integer("backward", 0, 1000));
    o.max_frames = int(cli.integer("max-frames", 0, 100000000));
    o.min_teacher_share = cli.number("min-teacher-share", 0.0, 1.0);
    return o;
}

std::unique_ptr<vision::Teacher> makeTeacher(const CliContext &cli)
{
    try {
        auto t = vision::Teacher::create(cli.text("teacher"));
        if (cli.isSet("threshold")) // a student keeps its operating threshold otherwise
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

std::string sessionFolder(const CliContext &cli)
{
    const std::string out = required(cli, "out");
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec)
        throw core::IoError("cannot create the session folder '" + out + "': " + ec.message());
    return out;
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

void announceLabelling(const CliContext &cli, vision::FrameSource &source,
                       const vision::Teacher &teacher, const vision::LabelOptions &o)
{
    cli.message("labelling " + source.description() + " (" +
                std::to_string(source.frameSize().width) + "x" +
                std::to_string(source.frameSize().height) + ", " +
                (source.frameCount() > 0 ? std::to_string(source.frameCount()) + " frames"
                                         : std::string("live")) +
                ") with teacher " + teacher.name() + " every " + std::to_string(o.every) +
                " frames, tracker " + o.tracker);
}

vision::LabelResult label(CliContext &cli, vision::FrameSource &source, vision::Teacher &teacher,
                          const vision::LabelOptions &o, const std::string &out)
{
    announceLabelling(cli, source, teacher, o);
    CliContext::installStopHandler();
    const auto start = std::chrono::steady_clock::now();
    std::string saveError;
    auto r = app::labelSource(
        source, teacher, o, out,
        [&](int f, int n, const vision::LabelStats &s) {
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            char line[200];
            std::snprintf(line, sizeof line, "frame %d/%d  teacher detections %d  %.1f fps", f, n,
                          s.teacher_detections, seconds > 0 ? s.frames / seconds : 0.0);
            cli.progress(line);
        },
        CliContext::stopFlag(), &saveError);
    cli.progressDone();
    if (!saveError.empty()) // said with the run's own reason, not instead of it
        r.stopped += (r.stopped.empty() ? "" : "; ") + saveError;
    reportLabelling(cli, r, out);
    return r;
}

void reportLabelling(const CliContext &cli, const vision::LabelResult &r, const std::string &out)
{
    char line[240];
    std::snprintf(line, sizeof line,
                  "%d frames in %.1f s (%.1f fps): %d tracks (%d rejected), %d teacher boxes, %d "
                  "tracker-only "
                  "boxes, %d drift stops, %zu scene cuts",
                  r.stats.frames, r.stats.seconds, r.stats.fps, r.stats.tracks,
                  r.stats.rejected_tracks, r.stats.teacher_boxes, r.stats.tracker_only_boxes,
                  r.stats.drift_stops, r.cuts.size());
    cli.message(line);
    if (r.stats.dropped.total() > 0)
        cli.message(std::to_string(r.stats.dropped.total()) +
                    " teacher boxes no tracker could take were dropped: " +
                    r.stats.dropped.summary(r.stats.min_box_px));
    if (r.stats.tracker_failures > 0)
        cli.message(std::to_string(r.stats.tracker_failures) +
                    " tracker errors, each ending one object's run (the tracks' 'failure' in " +
                    out + "/labels.json)");
    if (r.endedEarly())
        cli.message("the source ended after " + std::to_string(r.stats.frames) + " of the " +
                    std::to_string(r.announced_frames) + " frames it announced");
}

void requireWhole(const vision::LabelResult &labels, const std::string &out)
{
    if (labels.cancelled)
        throw core::Error("cancelled while labelling (the tracks so far are in " + out +
                          "/labels.json)");
    if (!labels.stopped.empty())
        throw core::Error("labelling stopped at " + labels.stopped + " (the tracks so far are in " +
                          out + "/labels.json)");
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
    core::Json dropped;
    dropped.set("total", r.stats.dropped.total())
        .set("not_finite", r.stats.dropped.not_finite)
        .set("outside", r.stats.dropped.outside)
        .set("too_small", r.stats.dropped.too_small)
        .set("min_side_px", r.stats.min_box_px);
    j.set("dropped_boxes", std::move(dropped)).set("tracker_failures", r.stats.tracker_failures);
    j.set("stopped", r.stopped).set("cancelled", r.cancelled);
    j.set("announced_frames", r.announced_frames).set("ended_early", r.endedEarly());
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
        if (t.failure)
            jt.set("failure", "frame " + std::to_string(t.failure->frame) +
                                  (t.failure->backward ? " (backwards): " : ": ") +
                                  t.failure->reason);
        list.push(std::move(jt));
    }
    j.set("track_list", std::move(list));
    return j;
}

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
    const std::string out = sessionFolder(cli);
    const auto options = labelOptions(cli);
    try {
        (void)vision::createTracker(options.tracker);
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
    auto teacher = makeTeacher(cli);
    auto source = vision::FrameSource::open(sourceSpec);
    const auto r = label(cli, *source, *teacher, options, out);
    cli.message("tracks written to " + out + "/labels.json");
    if (!r.stopped.empty())
        cli.message("error: labelling stopped at " + r.stopped + " (the tracks so far are kept)");
    if (cli.json())
        cli.printJson(labelJson(r).set("command", "label").set("session", out));
    return r.cancelled || !r.stopped.empty() ? ExitFailure : ExitSuccess;
}

} // namespace edgetrain::app
