#pragma once

#include "core/trainer.h"
#include "cropdataset.h"
#include "labeling.h"
#include "studentdetector.h"

namespace edgetrain::vision {

/** A held-out box only the tracker had found: the teacher misses it, the student finds it. */
struct ViewpointGain
{
    int frame = 0;
    cv::Rect2d box;     // the labelled box
    cv::Rect2d student; // the student's detection that matches it
};

/** Recall and precision on held-out tracks, split by who found each box. */
struct ViewpointEvaluation
{
    int frames = 0;              // evaluated frames (they hold test-split boxes)
    int teacher_found_boxes = 0; // test boxes the teacher found while labelling
    int tracker_only_boxes = 0;  // test boxes only the tracker found
    double teacher_recall_teacher_found = 0.0;
    double student_recall_teacher_found = 0.0;
    double teacher_recall_tracker_only = 0.0;
    double student_recall_tracker_only = 0.0;
    double student_precision = 0.0;
    double teacher_precision = 0.0;
    int student_detections = 0;
    int teacher_detections = 0;
    double match_iou = 0.5;
    std::vector<ViewpointGain> gains; // every such box in the evaluated frames, by frame
};

struct ViewpointOptions
{
    LabelOptions label;
    CropOptions crops;
    int epochs = 12;
    std::int64_t batch = 64;
    double lr = 0.02;
    int eval_frames = 30;
    double match_iou = 0.5;
    DetectorOptions detector; // heights are taken from the labelled boxes
};

class Viewpoint
{
public:
    /**
     * Runs the teacher and the student on frames that hold held-out (test-split) boxes: a box
     * counts as found by a detector when one of its detections overlaps it by `match_iou`. A
     * student detection is correct when it overlaps any labelled box or a teacher detection in
     * that frame (unlabelled objects make this a lower bound).
     */
    static ViewpointEvaluation
    evaluate(FrameSource &source, Teacher &teacher, StudentDetector &student,
             const LabelResult &labels, const std::map<int, Split> &splits,
             const ViewpointOptions &options, const std::atomic<bool> *stop = nullptr,
             const std::function<void(int done, int frames)> &progress = {});

    /** The same with a detector as the student (the full-frame student, StudentTeacher): its
     *  detect() at its own threshold. */
    static ViewpointEvaluation
    evaluate(FrameSource &source, Teacher &teacher, Teacher &student, const LabelResult &labels,
             const std::map<int, Split> &splits, const ViewpointOptions &options,
             const std::atomic<bool> *stop = nullptr,
             const std::function<void(int done, int frames)> &progress = {});

    /** Object heights to search, from the labelled boxes (10th to 90th percentile, widened). */
    static void fitDetector(const LabelResult &labels, DetectorOptions *detector);

    /** Trains the student on <session>/dataset (train split; validation for the report). */
    static core::TrainResult trainStudent(core::Model &student, const std::string &sessionDir,
                                          const ViewpointOptions &options,
                                          const core::Trainer::Callbacks &callbacks = {},
                                          const std::atomic<bool> *stop = nullptr);
};

} // namespace edgetrain::vision
