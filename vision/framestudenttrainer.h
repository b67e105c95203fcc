#pragma once

#include "core/trainer.h"
#include "framedataset.h"
#include "labeling.h"

#include <atomic>
#include <functional>
#include <string>

namespace edgetrain::vision {

struct FrameTrainOptions
{
    int epochs = 20;
    std::int64_t batch = 12;
    double lr = 0.02;      // peak, reached after the warmup; cosine down to 0 after
    int warmup_epochs = 1; // at lr / 10 first (the heatmap head starts at prior 0.1)
    double weight_decay = 5e-4;
    /** Early stop: the weights (and batch-norm statistics) of the epoch with the lowest
     *  validation loss are restored at the end (without a validation split: the last epoch's). */
    bool keep_best = true;
    /** With keep_best and a validation split: training ends once this many epochs in a row have
     *  not lowered the validation loss (0: every epoch); 10 kept the same epoch as running all
     *  40 in every recorded run on vtest.avi and Megamind.avi
     *  (docs/evidence/issue-19 in the git history). */
    int patience = 10;
    /** A moving average of the weights over the steps (core::WeightAverage), 0 for none: the
     *  validation loss and the weights kept are then the average's. Off by default: against
     *  verified frames it helped on one video and not on the other (docs/evidence/issue-19 in the
     *  git history). */
    double average_decay = 0.0;
    int max_objects = 32;
    std::uint64_t seed = 1;
};

struct SelfTrainOptions
{
    float threshold = 0.5f;   // the student's boxes it trusts (sigmoid of the heatmap)
    double overlap_iou = 0.3; // a box overlapping an existing label this much is not new
    LabelOptions label;       // how the student's hits are followed (tracker, every, max_frames)
};

struct SelfTrainStats
{
    int tracks = 0;        // tracks the student's run found
    int new_tracks = 0;    // added to the labels
    int student_boxes = 0; // added with source "student"
    int tracker_boxes = 0; // added with source "tracker" (the tracker between the student's hits)
    double seconds = 0.0;
};

/**
 * Trains the full-frame student (the zoo's `detector` at the frame dataset's input size) on
 * <session>/frames, and relabels the training frames with it for self-training.
 */
class FrameStudentTrainer
{
public:
    /** The 1-based epoch of the lowest validation loss in a result (0 without validation). */
    static int bestEpoch(const core::TrainResult &result);

    /** The zoo's `detector` spec at this input size (multiples of 8). */
    static core::ModelSpec spec(cv::Size input);

    /** Warmup epochs at lr / 10, then cosine from lr; SGD momentum 0.9. The validation split
     *  (when there is one) is evaluated every epoch; with keep_best the model ends with the
     *  weights of the lowest validation loss (bestEpoch() of the result names it). Callbacks see
     *  epochs numbered over both phases. */
    static core::TrainResult train(core::Model &model, const std::string &sessionDir,
                                   const FrameTrainOptions &options,
                                   const core::Trainer::Callbacks &callbacks = {},
                                   const std::atomic<bool> *stop = nullptr);

    /**
     * Self-training: the student (at options.threshold) is the teacher of a Labeler run over
     * the same frames as the labels (label.max_frames); the boxes of its tracks that overlap no
     * existing label (any track, accepted or rejected) in their frame join `labels` as new
     * tracks, the student's own hits with source Student.
     */
    static SelfTrainStats relabel(LabelResult &labels, FrameSource &source, core::Model &student,
                                  const SelfTrainOptions &options,
                                  const Labeler::Progress &progress = {},
                                  const std::atomic<bool> *stop = nullptr);
};

} // namespace edgetrain::vision
