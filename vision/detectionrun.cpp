#include "detectionrun.h"

#include <chrono>

namespace edgetrain::vision {

DetectionRunResult DetectionRun::run(FrameSource &source, const std::vector<Teacher *> &detectors,
                                     const std::set<int> &frames,
                                     const std::function<void(int, int)> &progress,
                                     const std::atomic<bool> *stop)
{
    DetectionRunResult r;
    r.detections.resize(detectors.size());
    r.detect_seconds.assign(detectors.size(), 0.0);
    if (frames.empty())
        return r;
    bool everyFrame = false;
    for (Teacher *d : detectors)
        everyFrame = everyFrame || d->needsEveryFrame();
    if (!source.seek(everyFrame ? 0 : *frames.begin()))
        throw SourceError("cannot seek in '" + source.description() + "'");
    Frame frame;
    while (source.read(frame)) {
        if (stop && stop->load())
            break;
        const int f = frame.index;
        if (f > *frames.rbegin())
            break;
        if (!frames.count(f)) {
            for (Teacher *d : detectors)
                if (d->needsEveryFrame())
                    d->observe(frame.image);
            if (!everyFrame) {
                const auto next = frames.lower_bound(f + 1);
                if (next != frames.end() && *next > f + 1)
                    (void)source.seek(*next);
            }
            continue;
        }
        for (std::size_t i = 0; i < detectors.size(); ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            const auto found = detectors[i]->detect(frame.image);
            r.detect_seconds[i] +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            auto &list = r.detections[i][f];
            for (const Detection &d : found)
                list.push_back({d.box, d.score});
        }
        ++r.frames;
        if (progress)
            progress(r.frames, int(frames.size()));
    }
    return r;
}

} // namespace edgetrain::vision
