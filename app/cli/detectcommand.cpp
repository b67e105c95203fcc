#include "detectcommand.h"

#include "clicontext.h"
#include "core/error.h"
#include "vision/framesource.h"
#include "vision/teacher.h"

#include <QString>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

namespace edgetrain::app {

namespace {

std::set<int> parseFrames(const std::string &text)
{
    std::set<int> frames;
    for (const QString &part : QString::fromStdString(text).split(QLatin1Char(','))) {
        bool ok = false;
        const int f = part.trimmed().toInt(&ok);
        if (!ok || f < 0)
            throw UsageError("--frames must be frame indices (0-based) separated by commas, like "
                             "3,17,40; '" +
                             part.toStdString() + "' is not one");
        frames.insert(f);
    }
    return frames;
}

} // namespace

int DetectCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("detect"),
                   QStringLiteral("Run one detector over a source and report its boxes in source "
                                  "pixels (JSON, MOT rows, a video with the boxes drawn)."),
                   arguments);
    cli.addOption("source", "Video file, camera:N (V4L2) or a folder of images.", "S");
    cli.addOption("detector",
                  "hog, cascade:FILE, onnx:FILE, motion, or session:DIR (a session's trained "
                  "full-frame student).",
                  "D");
    cli.addOption("frames", "Only these frames (0-based, comma-separated).", "LIST");
    cli.addOption("every", "Every K-th frame (default: every frame).", "K", "1");
    cli.addOption("max-frames", "Stop after frame N-1 (0: the whole source).", "N", "0");
    cli.addOption("threshold", "Score threshold (default: the detector's own).", "X");
    cli.addOption("mot", "Write MOT Challenge rows (frame 1-based, -1, x, y, w, h, score).",
                  "FILE");
    cli.addOption("video", "Write the detected frames with their boxes drawn (MJPG .avi).", "FILE");
    if (!cli.parse())
        return ExitSuccess;
    if (!cli.isSet("source") || cli.text("source").empty())
        throw UsageError("--source is required");
    if (!cli.isSet("detector") || cli.text("detector").empty())
        throw UsageError("--detector is required");
    if (cli.isSet("frames") && cli.isSet("every"))
        throw UsageError("--frames and --every exclude each other");
    const std::set<int> chosen =
        cli.isSet("frames") ? parseFrames(cli.text("frames")) : std::set<int>{};
    const int every = int(cli.integer("every", 1, 1000000));
    const int maxFrames = int(cli.integer("max-frames", 0, 100000000));

    std::unique_ptr<vision::Teacher> detector;
    try {
        detector = vision::Teacher::create(cli.text("detector"));
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
    if (cli.isSet("threshold"))
        detector->threshold = float(cli.number("threshold", -1e6, 1e6));
    auto source = vision::FrameSource::open(cli.text("source"));
    int last = source->frameCount() > 0 ? source->frameCount() - 1 : -1;
    if (maxFrames > 0)
        last = last < 0 ? maxFrames - 1 : std::min(last, maxFrames - 1);
    if (!chosen.empty())
        last = last < 0 ? *chosen.rbegin() : std::min(last, *chosen.rbegin());
    auto wanted = [&](int f) { return chosen.empty() ? f % every == 0 : chosen.count(f) > 0; };

    std::ofstream mot;
    if (cli.isSet("mot")) {
        mot.open(cli.text("mot"), std::ios::trunc);
        if (!mot)
            throw core::IoError("cannot write '" + cli.text("mot") + "'");
    }
    cv::VideoWriter video;
    if (cli.isSet("video")) {
        const double fps = source->fps() > 0 ? source->fps() : 25.0;
        if (!video.open(cli.text("video"), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps,
                        source->frameSize()))
            throw core::IoError("cannot write the video '" + cli.text("video") + "'");
    }

    CliContext::installStopHandler();
    const bool everyFrame = detector->needsEveryFrame();
    core::Json frames = core::Json::array();
    int detected = 0, boxes = 0;
    double seconds = 0.0;
    vision::Frame frame;
    cli.message("detecting with " + detector->name() + " on " + source->description());
    while (source->read(frame)) {
        if (CliContext::stopFlag()->load())
            break;
        const int f = frame.index;
        if (last >= 0 && f > last)
            break;
        if (!wanted(f)) {
            if (everyFrame)
                detector->observe(frame.image);
            else if (!chosen.empty()) {
                const auto next = chosen.lower_bound(f + 1);
                if (next != chosen.end() && *next > f + 1)
                    (void)source->seek(*next); // a source that cannot seek is read through
            }
            continue;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const std::vector<vision::Detection> found = detector->detect(frame.image);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++detected;
        boxes += int(found.size());
        core::Json list = core::Json::array();
        for (const vision::Detection &d : found) {
            core::Json b;
            b.set("x", d.box.x).set("y", d.box.y).set("w", d.box.width).set("h", d.box.height);
            b.set("score", double(d.score));
            list.push(std::move(b));
            if (mot.is_open()) {
                char row[200];
                std::snprintf(row, sizeof row, "%d,-1,%.2f,%.2f,%.2f,%.2f,%.4f,-1,-1,-1\n", f + 1,
                              d.box.x, d.box.y, d.box.width, d.box.height, double(d.score));
                mot << row;
            }
        }
        core::Json jf;
        jf.set("index", f).set("boxes", std::move(list));
        frames.push(std::move(jf));
        if (video.isOpened()) {
            cv::Mat drawn = frame.image.clone();
            for (const vision::Detection &d : found) {
                cv::rectangle(drawn, d.box, cv::Scalar(0, 200, 255), 2);
                char score[32];
                std::snprintf(score, sizeof score, "%.2f", double(d.score));
                cv::putText(drawn, score, cv::Point(int(d.box.x), int(d.box.y) - 3),
                            cv::FONT_HERSHEY_SIMPLEX, 0.45, cv::Scalar(0, 200, 255), 1);
            }
            video.write(drawn);
        }
        cli.progress("frame " + std::to_string(f) + ": " + std::to_string(found.size()) + " boxes");
    }
    cli.progressDone();
    if (mot.is_open() && !mot.flush())
        throw core::IoError("cannot write '" + cli.text("mot") + "'");
    const double fps = seconds > 0 ? detected / seconds : 0.0;
    char line[200];
    std::snprintf(line, sizeof line, "%d frames, %d boxes, %.1f frames/s (detection only)",
                  detected, boxes, fps);
    cli.message(line);
    if (!chosen.empty() && detected < int(chosen.size()))
        cli.message("warning: " + std::to_string(int(chosen.size()) - detected) +
                    " requested frames are past the end of the source");
    if (cli.json()) {
        core::Json j;
        j.set("command", "detect").set("detector", detector->name());
        j.set("source", source->description());
        j.set("frames", std::move(frames)).set("fps", fps).set("boxes", boxes);
        cli.printJson(j);
    }
    return ExitSuccess;
}

} // namespace edgetrain::app
