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
     *  not lowered the validation loss (0: every epoch). In 28 of 28 recorded 40-epoch runs
     *  (vtest.avi and Megamind.avi, docs/evidence/issue-19/cli-runs) 10 keeps the same epoch;
     *  vtest's runs end after 19-26 epochs. */
    int patience = 10;
    /** A moving average of the weights over the steps (core::WeightAverage), 0 for none: the
     *  validation loss and the weights kept are then the average's. Off by default: measured
     *  against verified frames it helped on one video and not on the other (0.99 on vtest.avi,
     *  three seeds, one labelling: held-out F1 0.826 / 0.839 / 0.839 -> 0.874 / 0.889 / 0.821;
     *  three demo runs on the cluster 0.813 / 0.851 / 0.818 against 0.82-0.92 without;
     *  Megamind.avi 0.583 / 0.917 / 0.667 against 0.750 / 0.917 / 0.750, see
     *  docs/evidence/issue-19). */
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
