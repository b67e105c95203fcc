#pragma once

#include "core/detectionloss.h"
#include "core/tensordataset.h"
#include "cropdataset.h"
#include "framesource.h"
#include "labeling.h"
#include "scenepaste.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace edgetrain::vision {

struct FrameDatasetOptions
{
    /** The detector's input (multiples of 8). {0, 0}: `width` wide, the frame's aspect. */
    cv::Size input{0, 0};
    int width = 256;
    /** Frames sampled: every k-th. 0: chosen so the float dataset stays under budget_bytes. */
    int every = 2;
    std::int64_t budget_bytes = std::int64_t(300) << 20;
    /** Frames >= max_frame are never read (0: no bound): `viewpoint --max-frames`. */
    int max_frame = 0;
    /** Train / validation by time blocks of block_frames (one in `validation_period` blocks is
     *  validation), never by single frames: neighbouring frames are near copies. */
    int block_frames = 60;
    int validation_period = 5; // 0: no validation split
    int augmented = 4;         // extra jittered copies of each sampled training frame
    /** Of those copies, how many are the frame with objects cut from other training frames
     *  pasted onto it at the scene's ground-plane sizes (ScenePaste) instead of jittered. */
    int pasted = 1;
    int backgrounds = 6; // hard negatives: the scene's background, jittered, no objects
    float min_tracker_confidence = 0.45f; // tracker boxes below: ignore regions, not objects
    double min_height_px = 6.0;           // smaller objects (input pixels) become ignore regions
    int cut_margin = 3;                   // frames either side of a scene cut are skipped
    /** Two objects in a frame that are one (IoU >= this, or the smaller >= 80 % inside the
     *  larger and at least a quarter of its area): the teacher fired on one face at two scales,
     *  or two tracks follow one person. One stays an object (the teacher's box in this frame,
     *  else the track confirmed nearer in time), the other becomes an ignore region. 0: off. */
    double same_object_iou = 0.5;
    int max_objects = 32;
    std::uint64_t seed = 1;
};

struct FrameDatasetStats
{
    cv::Size input;
    int every = 1;
    int frames[2] = {0, 0};  // sampled source frames, by split (train, validation)
    int samples[2] = {0, 0}; // with augmented copies and backgrounds
    int objects[2] = {0, 0};
    int ignores[2] = {0, 0};
    int backgrounds = 0;
    double seconds = 0.0;
    int round = 1;   // the self-training round of the labels it was built from (LabelResult::round)
    int pasted = 0;  // objects pasted onto training copies (ScenePaste)
    int cutouts = 0; // objects cut out to paste
    /** Label boxes of the sampled frames made ignore regions by the one-object rule
     *  (FrameDatasetOptions::same_object_iou): second boxes of one object, and boxes of very
     *  different sizes disagreeing on one spot. */
    int same_object = 0;
    GroundPlane ground;
};

/** One stored sample: its image file and boxes in input pixels. */
struct FrameSample
{
    std::string file; // relative to <session>/frames
    Split split = Split::Train;
    int frame = -1; // source frame; -1 for a background sample
    int pasted = 0; // the last `pasted` boxes are objects pasted onto the frame (ScenePaste)
    std::vector<core::LabelBox> boxes;
};

/**
 * The full-frame detector's dataset: whole frames of the session's labels, resized to the
 * detector's input (aspect kept), boxes scaled to input pixels. Objects: teacher boxes, student
 * boxes (self-training) and accepted tracker boxes with confidence >= min_tracker_confidence;
 * ignore regions: the boxes of rejected tracks and less confident tracker boxes. Frames next to
 * a scene cut are skipped. Training frames also give `augmented` copies: the first `pasted` of
 * them the frame with 1-3 objects cut out of other training frames pasted on, where the labels'
 * ground plane puts them and at its sizes (ScenePaste; colour jitter only), the others (flip, scale
 * 0.7-2.4, log-uniform, about a random centre: people nearer the camera than any in the training
 * span are seen at their size; and a shift of up to 15 % of the frame, with boxes cut at the border
 * clipped, or made ignore regions when mostly cut; brightness, contrast and a gain per colour
 * channel), and the scene's background (median of sampled frames)
 * gives `backgrounds` samples with no objects. Stored as PNG files under <session>/frames with an
 * index.json (boxes, split, frame; the labels' round); replaces an earlier dataset only once
 * complete, through frames.tmp and frames.old (DatasetFolder: a kill at any moment leaves one
 * complete dataset, which the readers here find).
 */
class FrameDataset
{
public:
    using Progress = std::function<void(int frame, int frames)>;
    /** Throws SourceError if the source cannot seek, IoError if the folder cannot be written. */
    static FrameDatasetStats build(const std::string &sessionDir, const LabelResult &labels,
                                   FrameSource &source, const FrameDatasetOptions &options,
                                   const Progress &progress = {},
                                   const std::atomic<bool> *stop = nullptr);

    /** The input size for a frame: `width` wide (multiple of 8), height from the aspect. */
    static cv::Size inputSize(cv::Size frame, int width = 256);

    /** A frame's label boxes in source pixels (ignore set for uncertain ones, and for the
     *  second box of one object: see FrameDatasetOptions::same_object_iou). A box more than
     *  twice smaller deep inside another: with a usable ground `plane`, the one whose height is
     *  within 50 % of the plane's at its bottom row (the nearer) stays; else neither. */
    static std::vector<core::LabelBox> frameBoxes(const LabelResult &labels, int frame,
                                                  const FrameDatasetOptions &options,
                                                  int *sameObject = nullptr,
                                                  const GroundPlane *plane = nullptr);

    /** The folder holding the session's dataset: <session>/frames, or frames.old after a build
     *  killed between moving the old dataset aside and the new one in. */
    static std::string folder(const std::string &sessionDir);

    /** The index of the session's dataset (folder()). Throws IoError / FormatError naming the
     *  file. */
    static std::vector<FrameSample> index(const std::string &sessionDir, cv::Size *input = nullptr);

    /** The figures of the session's dataset, counted from its index: what build() returned when
     *  it built it (`seconds` 0 and `round` 1 in an index from before they were recorded).
     *  Nothing without a dataset; throws FormatError naming the file for a damaged index. */
    static std::optional<FrameDatasetStats> stats(const std::string &sessionDir);

    /** One split as tensors [3, H, W] (CropDataset's normalisation) with DetectionLoss labels
     *  of labelWidth(maxObjects). Throws FormatError naming the file for a bad index or image,
     *  or an empty split. */
    static core::TensorDataset load(const std::string &sessionDir, Split split, int maxObjects);
};

} // namespace edgetrain::vision
