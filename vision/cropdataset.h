#pragma once

#include "boxguard.h"
#include "core/tensordataset.h"
#include "framesource.h"
#include "labeling.h"

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace edgetrain::vision {

enum class Split { Train, Validation, Test };
const char *splitName(Split split);

struct CropOptions
{
    cv::Size size{24, 48}; // width x height of a crop (the student's input)
    double context = 0.1;  // margin around a box, as a fraction of its size
    double negatives_per_positive = 2.0;
    bool near_misses = true; // also one window per positive that shows only part of it
    double train = 0.7, validation = 0.15; // by track; the rest is test
    int every = 1;                         // positives from every k-th frame of a track
    std::uint64_t seed = 1;
};

struct CropStats
{
    int positives[3] = {0, 0, 0}; // by split
    int negatives[3] = {0, 0, 0};
    int tracks[3] = {0, 0, 0};
    DroppedBoxes dropped; // label boxes that cut no crop (BoxGuard: outside the frame, ...)
};

/**
 * The student's dataset: positive crops from accepted tracks, negative crops of background that
 * overlaps no box of any track and "near misses" (a window shifted off or scaled around an
 * object, IoU under 0.3: they teach the student where an object is, not just that one is near),
 * split into train / validation / test by track (one track's crops are never in two sets; negatives
 * go to a split by frame). Written as PNG files under <session>/dataset/<split>/pos and .../neg
 * with an index.csv (path, label, split, track, frame, source), replacing any earlier dataset only
 * once the new one is complete, through dataset.building and dataset.old (DatasetFolder: a kill
 * at any moment leaves one complete dataset, which the readers here find).
 */
class CropDataset
{
public:
    using Progress = std::function<void(int frame, int frames)>;
    static CropStats build(const std::string &sessionDir, const LabelResult &labels,
                           FrameSource &source, const CropOptions &options,
                           const Progress &progress = {}, const std::atomic<bool> *stop = nullptr);

    /** Which split each accepted track is in (deterministic for a seed). */
    static std::map<int, Split> splitTracks(const LabelResult &labels, const CropOptions &options);

    /** The folder holding the session's dataset: <session>/dataset, or dataset.old after a build
     *  killed between moving the old dataset aside and the new one in. */
    static std::string folder(const std::string &sessionDir);

    /** The figures of the session's dataset, counted from its index: what build() returned when
     *  it built it. Nothing without a dataset; throws FormatError naming the file for a damaged
     *  index. */
    static std::optional<CropStats> stats(const std::string &sessionDir);

    /** Loads one split of the session's dataset (folder()) as tensors (3 x H x W, normalised),
     *  label 1 = object, 0 = background. Throws FormatError naming the file for a bad index or
     *  image. */
    static core::TensorDataset load(const std::string &sessionDir, Split split);

    /** The normalisation crops and the detector share: (pixel / 255 - 0.5) / 0.25, BGR planes. */
    static void toTensor(const cv::Mat &bgrCrop, float *out);
};

} // namespace edgetrain::vision
