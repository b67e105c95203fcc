#pragma once

#include "clustertraining.h"
#include "core/json.h"
#include "stepprogress.h"
#include "vision/framedataset.h"
#include "vision/framestudenttrainer.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>

namespace edgetrain::app {

/** One viewpoint run of the full-frame student: what to label, how to train, what to score. */
struct ViewpointPipelineOptions
{
    std::string source;     // video file, image folder or camera (vision::FrameSource::open)
    std::string sessionDir; // exists; receives labels.json, frames/ and the weights
    std::string teacher = "hog";
    float teacherThreshold = 0.0f; // labelling and the verified teacher baseline
    vision::LabelOptions label;
    /** Set: these labels (an earlier session's) instead of labelling; saved into sessionDir. */
    std::optional<vision::LabelResult> labels;
    vision::FrameDatasetOptions dataset; // its max_frame is label.max_frames
    vision::FrameTrainOptions train;
    int rounds = 1;                        // 2 or more: self-training between them
    float selfThreshold = 0.5f;            // the student's boxes trusted in self-training
    std::optional<float> studentThreshold; // fixed; unset: calibrated (calibrateStudent)
    /** The verified frames (done only) teacher, motion and every round's student are scored on;
     *  empty: not scored. */
    vision::GroundTruth truth;
    double matchIou = 0.5; // for the verified frames' scores, not for the calibration
    bool seenOnly = false; // tuning: only the verified frames < label.max_frames
    /** Set: every round trains on these nodes through TrainingRun, as the window's training
     *  step does (a fresh job each round, at `train`'s epochs and lr); unset: here. */
    std::optional<ClusterOptions> cluster;
    /** Trained here: the detector's early stages as a fused tile group (resolveTiling, at the
     *  training batch; on nodes, cluster->tiling says it). */
    TilingRequest tiling;
};

/** What the pipeline says as it goes; every member may be empty. */
struct ViewpointCallbacks
{
    std::function<void(const std::string &line)> message; // a finished step's line
    StepProgress progress;                                // within a step
    vision::Labeler::Progress labelProgress;
    /** The labels, once labelled (before the dataset). */
    std::function<void(const vision::LabelResult &labels)> labelled;
};

/** What a viewpoint run gives: its labels and its report (the CLI's --json fields, after the
 *  labelling's own). */
struct ViewpointResult
{
    vision::LabelResult labels;
    core::Json report;
};

/**
 * The viewpoint adaptation of the full-frame student, headless (`edgetrain-cli viewpoint`, and
 * the window's steps through the same functions): label (or take the given labels), then per
 * round build the frame dataset (from round 2 on, self-training first: selfTrain), train the
 * detector here (FrameStudentTrainer) or on the nodes (trainOnCluster with clusterSetup, the
 * window's job), keep each round's weights; calibrate the student's operating threshold
 * (calibrateStudent, the window's calibration) unless one is fixed; score teacher, motion and
 * each round's student on the verified frames (VerifiedRun: the held-out ones from
 * label.max_frames on, and those before it). Throws core::Error when a step fails or is stopped
 * (the message says which); labels.json stays with what was labelled.
 */
ViewpointResult runViewpointPipeline(const ViewpointPipelineOptions &options,
                                     const ViewpointCallbacks &callbacks,
                                     const std::atomic<bool> *stop);

} // namespace edgetrain::app
