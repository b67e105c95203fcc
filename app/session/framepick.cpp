#include "framepick.h"

#include "vision/cropdataset.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace edgetrain::app {

namespace {

/** Up to `k` of `candidates` (sorted), evenly spread: the middle of each of k equal parts, or
 *  the nearest candidate not taken yet. */
int spread(const std::vector<int> &candidates, int k, std::set<int> &taken)
{
    const int n = int(candidates.size());
    int added = 0;
    for (int i = 0; i < k; ++i) {
        const int centre = std::min(n - 1, int((i + 0.5) * n / k));
        for (int d = 0; d < n; ++d) {
            const int lo = centre - d, hi = centre + d;
            if (lo >= 0 && taken.insert(candidates[std::size_t(lo)]).second) {
                ++added;
                break;
            }
            if (hi < n && taken.insert(candidates[std::size_t(hi)]).second) {
                ++added;
                break;
            }
            if (lo < 0 && hi >= n)
                break;
        }
    }
    return added;
}

} // namespace

FramePick FramePick::fromLabels(const vision::LabelResult *labels, int frames, int count, int seed)
{
    FramePick pick;
    pick.frames = frames;
    pick.count = count;
    if (labels) {
        std::set<int> labelled;
        for (const vision::Track &t : labels->tracks)
            if (t.state == vision::Track::State::Accepted)
                for (const vision::TrackBox &b : t.boxes)
                    if (b.frame < frames)
                        labelled.insert(b.frame);
        pick.labelled.assign(labelled.begin(), labelled.end());
        pick.labelledFrames = std::min(frames, labels->stats.frames);
        vision::CropOptions options;
        options.seed = std::uint64_t(seed);
        for (const auto &[id, split] : vision::CropDataset::splitTracks(*labels, options)) {
            if (split != vision::Split::Test)
                continue;
            for (const vision::Track &t : labels->tracks)
                if (t.id == id && !t.boxes.empty())
                    pick.heldOut.emplace_back(t.boxes.front().frame, t.boxes.back().frame);
        }
        // Frames past the labelled part (labelling stopped early) were never trained on either.
        if (labels->stats.frames > 0 && labels->stats.frames < frames)
            pick.heldOut.emplace_back(labels->stats.frames, frames - 1);
    }
    if (pick.heldOut.empty() && frames > 0)
        pick.heldOut.emplace_back(frames - frames / 3, frames - 1);
    return pick;
}

std::vector<int> pickFrames(const FramePick &pick)
{
    std::set<int> taken;
    for (int f : pick.keep)
        if (f >= 0 && f < pick.frames)
            taken.insert(f);
    int wanted = std::min(pick.count, pick.frames) - int(taken.size());
    if (wanted <= 0)
        return {taken.begin(), taken.end()};

    std::vector<char> held(std::size_t(std::max(pick.frames, 0)), 0), labelled(held.size(), 0);
    for (const auto &[first, last] : pick.heldOut)
        for (int f = std::max(first, 0); f <= std::min(last, pick.frames - 1); ++f)
            held[std::size_t(f)] = 1;
    for (int f : pick.labelled)
        if (f >= 0 && f < pick.frames)
            labelled[std::size_t(f)] = 1;
    std::vector<int> heldFrames, otherFrames, unlabelledFrames;
    for (int f = 0; f < pick.frames; ++f) {
        (held[std::size_t(f)] ? heldFrames : otherFrames).push_back(f);
        if (f < pick.labelledFrames && !labelled[std::size_t(f)])
            unlabelledFrames.push_back(f);
    }

    // Unlabelled first (a fifth, at least one when there are any), then held out, then the rest;
    // what one group cannot give goes to the next, and finally to any frame.
    const int nUnlabelled =
        unlabelledFrames.empty() ? 0 : std::max(1, int(std::lround(wanted * 0.2)));
    wanted -= spread(unlabelledFrames, std::min(nUnlabelled, wanted), taken);
    const int nHeld = int(std::lround(wanted * 2.0 / 3.0));
    wanted -= spread(heldFrames, nHeld, taken);
    wanted -= spread(otherFrames, wanted, taken);
    wanted -= spread(heldFrames, wanted, taken);
    if (wanted > 0) {
        std::vector<int> all(std::size_t(pick.frames));
        for (int f = 0; f < pick.frames; ++f)
            all[std::size_t(f)] = f;
        spread(all, wanted, taken);
    }
    return {taken.begin(), taken.end()};
}

} // namespace edgetrain::app
