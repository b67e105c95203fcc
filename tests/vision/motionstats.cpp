// motion-stats: the measurements behind MotionTeacher's and HogTeacher's defaults, on the first
// frames of a fixed-camera video (vtest.avi frames 0-479: never later ones, they are the
// held-out evaluation span).
//   motion-stats --video vtest.avi [--frames 480] [--hog-every 4]
// 1. motion speed: MotionTeacher::detect on every frame, one thread (decoding not counted);
// 2. HOG's box convention: raw HOG windows (identity convention) matched to a single clean
//    motion blob (the only blob the window touches, IoU > 0.3 after a rough correction, height
//    50-140 px, no other blob within 4 px); the median of each edge's offset as a fraction of
//    the window's width or height;
// 3. MOG2 against KNN: the share of corrected HOG hits that a blob matches at IoU >= 0.5;
// 4. per frame on average: HOG hits, motion blobs, hog+motion boxes.

#include "vision/motionfusionteacher.h"
#include "vision/motionteacher.h"
#include "vision/teacher.h"

#include <opencv2/core/utility.hpp>
#include <opencv2/videoio.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace edgetrain::vision;

namespace {

/** The q-quantile (nearest rank) of v. */
double quantile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))];
}

std::vector<cv::Mat> readFrames(const std::string &path, int count)
{
    cv::VideoCapture video(path);
    if (!video.isOpened()) {
        std::fprintf(stderr, "motion-stats: cannot open '%s'\n", path.c_str());
        std::exit(2);
    }
    std::vector<cv::Mat> frames;
    cv::Mat f;
    while (int(frames.size()) < count && video.read(f))
        frames.push_back(f.clone());
    return frames;
}

} // namespace

int main(int argc, char **argv)
{
    std::string path;
    int count = 480, hogEvery = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--video")
            path = argv[i + 1];
        else if (a == "--frames")
            count = std::atoi(argv[i + 1]);
        else if (a == "--hog-every")
            hogEvery = std::max(1, std::atoi(argv[i + 1]));
        else {
            std::fprintf(stderr, "motion-stats: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (path.empty() || count < 1) {
        std::fprintf(stderr, "usage: motion-stats --video FILE [--frames N] [--hog-every K]\n");
        return 2;
    }
    const std::vector<cv::Mat> frames = readFrames(path, count);
    std::printf("%zu frames of %s (%dx%d)\n", frames.size(), path.c_str(), frames[0].cols,
                frames[0].rows);

    // 1. speed, one thread
    cv::setNumThreads(1);
    for (const char *spec : {"motion", "motion?model=knn", "motion?scale=0.5"}) {
        auto m = Teacher::create(spec);
        std::size_t boxes = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (const cv::Mat &f : frames)
            boxes += m->detect(f).size();
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%-18s %.1f frames/s on one thread, %.2f boxes/frame\n", spec,
                    double(frames.size()) / s, double(boxes) / double(frames.size()));
    }
    cv::setNumThreads(-1);

    // 2. and 3.
    HogTeacher rawHog;
    rawHog.convention = {};
    const BoxConvention rough{0.1, 0.07, -0.1, -0.07};
    const BoxConvention now = HogTeacher::defaultConvention();
    MotionTeacher mog2, knn(MotionOptions::parse("model=knn", "motion?model=knn"));
    std::vector<double> e[4];
    int hogFrames = 0, hits = 0, agreeMog2 = 0, agreeKnn = 0;
    double blobsMog2 = 0;
    for (std::size_t f = 0; f < frames.size(); ++f) {
        if (int(f) % hogEvery != 0 || int(f) <= mog2.options().warmup_frames) {
            mog2.observe(frames[f]);
            knn.observe(frames[f]);
            continue;
        }
        ++hogFrames;
        const auto raw = rawHog.detect(frames[f]);
        (void)mog2.detect(frames[f]);
        (void)knn.detect(frames[f]);
        const auto &blobs = mog2.blobs();
        blobsMog2 += double(blobs.size());
        auto agrees = [&](const std::vector<MotionTeacher::Blob> &bs, const cv::Rect2d &r) {
            return std::any_of(bs.begin(), bs.end(),
                               [&](const MotionTeacher::Blob &b) { return iou(b.box, r) >= 0.5; });
        };
        for (const Detection &d : raw) {
            ++hits;
            agreeMog2 += agrees(mog2.blobs(), now.apply(d.box));
            agreeKnn += agrees(knn.blobs(), now.apply(d.box));
            std::vector<std::size_t> touching;
            for (std::size_t b = 0; b < blobs.size(); ++b)
                if ((blobs[b].box & d.box).area() > 0)
                    touching.push_back(b);
            if (touching.size() != 1)
                continue;
            const auto &blob = blobs[touching[0]];
            if (iou(blob.box, rough.apply(d.box)) <= 0.3 || blob.box.height < 50 ||
                blob.box.height > 140)
                continue;
            const cv::Rect2d near(blob.box.x - 4, blob.box.y - 4, blob.box.width + 8,
                                  blob.box.height + 8);
            if (std::any_of(blobs.begin(), blobs.end(), [&](const MotionTeacher::Blob &o) {
                    return o.label != blob.label && (o.box & near).area() > 0;
                }))
                continue;
            const cv::Rect2d &w = d.box;
            e[0].push_back((blob.box.x - w.x) / w.width);
            e[1].push_back((blob.box.y - w.y) / w.height);
            e[2].push_back((blob.box.br().x - w.br().x) / w.width);
            e[3].push_back((blob.box.br().y - w.br().y) / w.height);
        }
    }
    std::printf("HOG on %d frames (every %d-th after the warm-up): %.2f hits/frame, %.2f MOG2 "
                "blobs/frame\n",
                hogFrames, hogEvery, double(hits) / hogFrames, blobsMog2 / hogFrames);
    std::printf("HOG convention from %zu clean matches, median edge offsets [quartiles]:\n",
                e[0].size());
    const char *edge[] = {"dx0", "dy0", "dx1", "dy1"};
    for (int i = 0; i < 4; ++i)
        std::printf("  %s %.3f [%.3f, %.3f]\n", edge[i], quantile(e[i], 0.5), quantile(e[i], 0.25),
                    quantile(e[i], 0.75));
    std::printf("corrected HOG hits a blob matches at IoU >= 0.5: MOG2 %.3f, KNN %.3f\n",
                double(agreeMog2) / std::max(hits, 1), double(agreeKnn) / std::max(hits, 1));

    // 4. fusion, same frames
    MotionFusionTeacher fusion(std::make_unique<HogTeacher>(), std::make_unique<MotionTeacher>());
    MotionFusionTeacher::Counts sum;
    int fused = 0, fusionFrames = 0;
    for (std::size_t f = 0; f < frames.size(); ++f) {
        if (int(f) % hogEvery != 0 || int(f) <= fusion.motion().options().warmup_frames) {
            fusion.observe(frames[f]);
            continue;
        }
        ++fusionFrames;
        fused += int(fusion.detect(frames[f]).size());
        const auto &c = fusion.lastCounts();
        sum.hits += c.hits;
        sum.blobs += c.blobs;
        sum.confirmed += c.confirmed;
        sum.split_parts += c.split_parts;
        sum.detector_only += c.detector_only;
        sum.motion_only += c.motion_only;
        sum.dropped_blobs += c.dropped_blobs;
    }
    const double n = std::max(fusionFrames, 1);
    std::printf("hog+motion per frame: %.2f HOG hits, %.2f blobs -> %.2f boxes (confirmed %.2f, "
                "of them split parts %.2f; HOG only %.2f; motion only %.2f; blobs dropped %.2f)\n",
                sum.hits / n, sum.blobs / n, fused / n, sum.confirmed / n, sum.split_parts / n,
                sum.detector_only / n, sum.motion_only / n, sum.dropped_blobs / n);
    return 0;
}
