#include "pickcommand.h"

#include "app/session/disagreement.h"
#include "app/session/framepick.h"
#include "app/session/session.h"
#include "clicontext.h"
#include "labelcommand.h"
#include "vision/framesource.h"
#include "vision/groundtruth.h"
#include "vision/studentteacher.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace edgetrain::app {

namespace {

/** What the pick reads from a session folder. */
struct SessionFiles
{
    std::optional<vision::LabelResult> labels;
    vision::GroundTruth truth;
    std::string source;
    QString teacher = QStringLiteral("hog"); // session.json's, else labels.json's
    int seed = 1;                            // of the dataset's split (the spread pick's held-out)
};

SessionFiles readSession(const std::string &dir)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw UsageError("--session '" + dir + "' is not a folder");
    SessionFiles s;
    if (std::filesystem::exists(dir + "/labels.json"))
        s.labels = vision::LabelResult::load(dir);
    if (vision::GroundTruth::exists(dir))
        s.truth = vision::GroundTruth::load(dir);
    s.source = s.labels ? s.labels->source : s.truth.source;
    if (s.source.empty())
        throw core::IoError("the session " + dir +
                            " has no labels.json or truth.json naming its video");
    if (s.labels && !s.labels->teacher.empty())
        s.teacher = QString::fromStdString(s.labels->teacher);
    if (std::filesystem::exists(dir + "/session.json")) {
        QString error;
        if (const auto session = Session::open(QString::fromStdString(dir), &error)) {
            s.teacher = session->capture.teacher;
            s.seed = session->dataset.seed;
        }
    }
    return s;
}

std::vector<FrameDisagreement> runDisagreement(const CliContext &cli, const std::string &dir,
                                               const SessionFiles &s, int frames,
                                               const std::vector<int> &keep)
{
    if (!std::filesystem::exists(vision::StudentTeacher::weightsPath(dir)))
        throw core::IoError("session '" + dir +
                            "' has no trained student (no detector.safetensors): the "
                            "disagreement pick needs one; --by spread does not");
    DisagreementRun run;
    run.source = QString::fromStdString(s.source);
    run.teacher = s.teacher;
    run.labels = s.labels ? &*s.labels : nullptr;
    run.sessionDir = dir;
    run.frames = Disagreement::candidates(frames, keep);
    cli.message("running teacher, motion and student on " + std::to_string(run.frames.size()) +
                " frames (every " + std::to_string(Disagreement::candidateStep(frames)) +
                "th, and the verified ones)");
    CliContext::installStopHandler();
    const auto sources = Disagreement::collect(
        run, [&](int, int, const QString &text) { cli.progress(text.toStdString()); },
        CliContext::stopFlag());
    cli.progressDone();
    if (CliContext::stopFlag()->load())
        throw core::Error("stopped");
    return Disagreement::score(sources);
}

void printFrames(const std::vector<int> &picked, const std::set<int> &kept,
                 const std::map<int, FrameDisagreement> &parts)
{
    std::printf("frame  kept  score  unmatched  near  only-one  sources\n");
    for (int f : picked) {
        const auto it = parts.find(f);
        if (it == parts.end()) {
            std::printf("%5d  %4s\n", f, kept.count(f) ? "yes" : "");
            continue;
        }
        const FrameDisagreement &d = it->second;
        std::printf("%5d  %4s  %5.1f  %9d  %4d  %8d  %7d\n", f, kept.count(f) ? "yes" : "",
                    d.score(), d.unmatched, d.nearThreshold, d.onlyOne, d.sources);
    }
}

core::Json framesJson(const std::vector<int> &picked, const std::set<int> &kept,
                      const std::map<int, FrameDisagreement> &parts)
{
    core::Json list = core::Json::array();
    for (int f : picked) {
        core::Json j;
        j.set("frame", f).set("kept", kept.count(f) > 0);
        if (const auto it = parts.find(f); it != parts.end()) {
            const FrameDisagreement &d = it->second;
            j.set("score", d.score()).set("unmatched", d.unmatched);
            j.set("near_threshold", d.nearThreshold).set("only_one", d.onlyOne);
            j.set("sources", d.sources);
        }
        list.push(std::move(j));
    }
    return list;
}

} // namespace

int PickCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("pick"),
                   QStringLiteral("The frames of a session to verify next: spread evenly (the "
                                  "unbiased pick) or where the detectors disagree, keeping the "
                                  "frames truth.json holds."),
                   arguments);
    cli.addOption("session", "The session folder (labels.json, truth.json, the student).", "DIR");
    cli.addOption("count", "Frames wanted in all, the kept ones included.", "N", "20");
    cli.addOption("by",
                  "spread (evenly over the video, the unbiased pick) or disagreement (where "
                  "teacher, motion, tracker and student disagree; needs a trained student).",
                  "PICK", "spread");
    cli.addOption("write",
                  "Add the new frames to truth.json (not verified yet, their pick named).");
    if (!cli.parse())
        return ExitSuccess;
    const std::string dir = required(cli, "session");
    const std::string by = cli.text("by");
    if (by != "spread" && by != "disagreement")
        throw UsageError("--by must be spread or disagreement, not '" + by + "'");
    const int count = int(cli.integer("count", 1, 100000));
    SessionFiles s = readSession(dir);
    const auto source = vision::FrameSource::open(s.source);
    const int frames = source->frameCount();
    if (frames <= 0)
        throw core::IoError("'" + s.source + "' has no known length (a camera): nothing to pick");

    std::vector<int> keep;
    for (const vision::TruthFrame &f : s.truth.frames)
        keep.push_back(f.index);
    const std::set<int> kept(keep.begin(), keep.end());
    std::vector<int> picked;
    std::map<int, FrameDisagreement> parts;
    if (by == "spread") {
        FramePick pick =
            FramePick::fromLabels(s.labels ? &*s.labels : nullptr, frames, count, s.seed);
        pick.keep = keep;
        picked = pickFrames(pick);
    } else {
        const auto scored = runDisagreement(cli, dir, s, frames, keep);
        for (const FrameDisagreement &d : scored)
            parts[d.frame] = d;
        DisagreementPick pick;
        pick.frames = frames;
        pick.count = count;
        pick.keep = keep;
        picked = Disagreement::pick(scored, pick);
    }

    int added = 0;
    if (cli.isSet("write")) {
        for (int f : picked)
            if (!s.truth.frame(f)) {
                s.truth.ensureFrame(f).pick = by;
                ++added;
            }
        if (s.truth.source.empty())
            s.truth.source = s.source;
        if (s.truth.frame_size.area() == 0)
            s.truth.frame_size = source->frameSize();
        s.truth.save(dir);
        cli.message("added " + std::to_string(added) + " frames to " + dir + "/truth.json");
    }
    if (!cli.json()) {
        printFrames(picked, kept, parts);
        return ExitSuccess;
    }
    core::Json j;
    j.set("command", "pick").set("session", dir).set("by", by).set("count", count);
    if (by == "disagreement")
        j.set("every", Disagreement::candidateStep(frames)).set("candidates", int(parts.size()));
    j.set("frames", framesJson(picked, kept, parts)).set("written", added);
    cli.printJson(j);
    return ExitSuccess;
}

} // namespace edgetrain::app
