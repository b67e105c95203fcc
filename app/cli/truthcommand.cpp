#include "truthcommand.h"

#include "clicontext.h"
#include "core/error.h"
#include "vision/framesource.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"

#include <cstdio>
#include <filesystem>

namespace edgetrain::app {

namespace {

std::string required(const CliContext &cli, const char *option)
{
    if (!cli.isSet(option) || cli.text(option).empty())
        throw UsageError(std::string("--") + option + " is required");
    return cli.text(option);
}

vision::AnnotationFormat format(const CliContext &cli)
{
    try {
        return vision::annotationFormat(required(cli, "format"));
    } catch (const core::Error &e) {
        throw UsageError(std::string("--format: ") + e.what());
    }
}

int countIgnore(const vision::GroundTruth &gt)
{
    int n = 0;
    for (const auto &f : gt.frames)
        for (const auto &b : f.boxes)
            n += b.ignore ? 1 : 0;
    return n;
}

int runImport(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("truth import"),
                   QStringLiteral("Import verified frames (ground truth) into a session's "
                                  "truth.json, replacing the frames the file holds."),
                   arguments);
    cli.addOption("session", "Session folder (truth.json is written there).", "DIR");
    cli.addOption("format",
                  "mot (gt.txt), coco (JSON), cvat (for images 1.1 XML) or yolo "
                  "(a folder of .txt and classes.txt).",
                  "F");
    cli.addOption("file", "The annotations (a folder for yolo).", "PATH");
    cli.addOption("source",
                  "The video the frame numbers refer to (default: the session's, "
                  "from labels.json or truth.json).",
                  "S");
    cli.addOption("category", "The object category (default: the truth's, or person).", "NAME");
    if (!cli.parse())
        return ExitSuccess;
    const std::string session = required(cli, "session");
    const auto fmt = format(cli);
    const std::string file = required(cli, "file");

    vision::GroundTruth truth;
    const bool had = vision::GroundTruth::exists(session);
    if (had)
        truth = vision::GroundTruth::load(session);
    std::string sourceSpec;
    if (cli.isSet("source"))
        sourceSpec = cli.text("source");
    else if (std::filesystem::exists(session + "/labels.json"))
        sourceSpec = vision::LabelResult::load(session).source;
    else if (had)
        sourceSpec = truth.source;
    if (sourceSpec.empty())
        throw UsageError("the session " + session +
                         " has no labels.json or truth.json naming its video: give --source");
    if (cli.isSet("category"))
        truth.category = cli.text("category");
    auto source = vision::FrameSource::open(sourceSpec);
    const cv::Size size = source->frameSize();
    const int count = source->frameCount();
    if (had && truth.source != sourceSpec && !truth.source.empty())
        cli.message("note: truth.json was made on " + truth.source + ", importing against " +
                    sourceSpec);

    const vision::GroundTruth imported =
        vision::GroundTruth::importFile(file, fmt, size, count, truth.category);
    truth.merge(imported);
    truth.source = sourceSpec;
    truth.note = truth.note.empty() ? imported.note : truth.note + "; " + imported.note;
    truth.save(session);

    cli.message("imported " + std::to_string(imported.frames.size()) + " frames, " +
                std::to_string(imported.boxCount()) + " boxes (" +
                std::to_string(countIgnore(imported)) + " ignore) from " + file + " into " +
                session + "/truth.json: " + std::to_string(truth.doneFrames()) +
                " verified frames in all");
    if (cli.json()) {
        core::Json j;
        j.set("command", "truth import").set("session", session).set("file", file);
        j.set("format", vision::annotationFormatName(fmt)).set("source", sourceSpec);
        j.set("frames", int(imported.frames.size()))
            .set("boxes", imported.boxCount())
            .set("ignore_boxes", countIgnore(imported));
        j.set("truth_frames", int(truth.frames.size())).set("done_frames", truth.doneFrames());
        cli.printJson(j);
    }
    return ExitSuccess;
}

int runExport(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("truth export"),
                   QStringLiteral("Export a session's verified frames, or its labels (accepted "
                                  "tracks), as MOT, COCO, CVAT or YOLO annotations."),
                   arguments);
    cli.addOption("session", "Session folder.", "DIR");
    cli.addOption("format", "mot, coco, cvat or yolo.", "F");
    cli.addOption("out", "The file to write (yolo: a new folder).", "PATH");
    cli.addOption("what",
                  "truth (the verified frames of truth.json) or labels (labels.json's "
                  "accepted tracks).",
                  "WHAT", "truth");
    if (!cli.parse())
        return ExitSuccess;
    const std::string session = required(cli, "session");
    const auto fmt = format(cli);
    const std::string out = required(cli, "out");
    const std::string what = cli.text("what");
    vision::GroundTruth gt;
    if (what == "truth") {
        gt = vision::GroundTruth::load(session).doneOnly();
        if (gt.frames.empty())
            throw core::Error("no verified (done) frames in " + session + "/truth.json");
    } else if (what == "labels") {
        gt = vision::GroundTruth::fromLabels(vision::LabelResult::load(session));
    } else {
        throw UsageError("--what must be truth or labels, got '" + what + "'");
    }
    gt.exportFile(out, fmt);
    const std::string losses = gt.exportLosses(fmt);
    cli.message("exported " + std::to_string(gt.frames.size()) + " frames, " +
                std::to_string(gt.boxCount()) + " boxes (" + what + ") to " + out +
                (losses.empty() ? std::string() : " (" + losses + ")"));
    if (cli.json()) {
        core::Json j;
        j.set("command", "truth export").set("session", session).set("what", what);
        j.set("format", vision::annotationFormatName(fmt)).set("out", out);
        j.set("frames", int(gt.frames.size())).set("boxes", gt.boxCount());
        j.set("losses", losses);
        cli.printJson(j);
    }
    return ExitSuccess;
}

} // namespace

int TruthCommand::run(const QStringList &arguments)
{
    const QString action = arguments.isEmpty() ? QString() : arguments.first();
    const QStringList rest = arguments.mid(1);
    if (action == QLatin1String("import"))
        return runImport(rest);
    if (action == QLatin1String("export"))
        return runExport(rest);
    if (action == QLatin1String("--help") || action == QLatin1String("-h")) {
        std::fputs("Usage: edgetrain-cli truth import|export [options]   (edgetrain-cli truth "
                   "import --help)\n",
                   stdout);
        return ExitSuccess;
    }
    throw UsageError(action.isEmpty() ? std::string("expected import or export")
                                      : "unknown action '" + action.toStdString() +
                                            "' (expected import or export)");
}

} // namespace edgetrain::app
