#pragma once

#include "core/model.h"
#include "stepprogress.h"
#include "vision/framedataset.h"
#include "vision/framestudenttrainer.h"
#include "vision/labeling.h"
#include "vision/operatingpoint.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace edgetrain::vision {
class FrameSource;
}

namespace edgetrain::app {

/**
 * The full-frame student's operating threshold: its best F0.5 against the session's labels on the
 * frames it trained on (OperatingPointCalibration at its defaults: 60 frames, IoU 0.5; never the
 * held-out or the verified frames), with the frame dataset's ground plane so the labels are the
 * targets it trained on. Saved with the weights at `weightsPath` (when not empty), so every later
 * user of the student (detect, the live preview) runs it there. The window's Evaluate and the
 * CLI's viewpoint calibrate here, whatever IoU the verified frames are scored at. Throws what
 * the source or the weights' file throw; stopped, it returns what it has and saves nothing.
 */
vision::OperatingPoint
calibrateStudent(vision::FrameSource &source, const std::shared_ptr<core::Model> &student,
                 const vision::LabelResult &labels, const std::optional<vision::GroundPlane> &plane,
                 const std::string &weightsPath, const StepProgress &progress,
                 const std::atomic<bool> *stop);

/** What a self-training pass added, and the frame dataset rebuilt from the grown labels. */
struct SelfTrainingStep
{
    vision::SelfTrainStats added;
    vision::FrameDatasetStats dataset;
};

/**
 * One self-training pass: the trained student relabels the labelled frames
 * (FrameStudentTrainer::relabel, its boxes above `threshold` that overlap no label join as new
 * tracks, followed as `labels.options` says), the frame dataset in `sessionDir` is rebuilt from
 * the grown labels, then labels.json is written (the commit: only once the dataset matches them).
 * `labels.round` should already be the next round. Stopped: nullopt, labels.json unchanged
 * (`labels` in memory may hold the student's tracks). Throws on I/O errors.
 */
std::optional<SelfTrainingStep> selfTrain(vision::LabelResult &labels, vision::FrameSource &source,
                                          core::Model &student, float threshold,
                                          const std::string &sessionDir,
                                          const vision::FrameDatasetOptions &dataset,
                                          const StepProgress &progress,
                                          const std::atomic<bool> *stop);

} // namespace edgetrain::app
