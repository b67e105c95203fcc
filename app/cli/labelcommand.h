#pragma once

#include "vision/labeling.h"

#include <QStringList>

#include <memory>
#include <string>

namespace edgetrain::app {

class CliContext;

/** `edgetrain-cli label`: teacher + tracker propagation over a video, tracks to a session. */
class LabelCommand
{
public:
    static int run(const QStringList &arguments);
};

// The labelling steps `label` shares with `viewpoint`.

/** --source, --teacher, --threshold, --tracker, --every, --backward, --max-frames,
 *  --min-teacher-share, --out. */
void addLabelOptions(CliContext &cli);
vision::LabelOptions labelOptions(const CliContext &cli);
/** --teacher with --threshold; a spec it does not know is a usage error. */
std::unique_ptr<vision::Teacher> makeTeacher(const CliContext &cli);
/** The option's text; a usage error when it is missing or empty. */
std::string required(const CliContext &cli, const char *option);
/** --out, created now: a folder that cannot be made is said before the labelling, not after. */
std::string sessionFolder(const CliContext &cli);
/** --size WxH of the crops (8x8 to 512x512). */
cv::Size parseSize(const std::string &text);
/** Labels `source` into the session folder `out`: labels.json is saved as the run goes
 *  (Labeler's checkpoints) and at its end, whatever ended it. What was dropped, what failed and
 *  why a run stopped are said; the caller decides what a stopped run means for its exit. */
vision::LabelResult label(CliContext &cli, vision::FrameSource &source, vision::Teacher &teacher,
                          const vision::LabelOptions &o, const std::string &out);
/** label()'s first line (what is labelled, with what) and its last ones (what it found, what
 *  was dropped, what failed), for a caller that labels through the session's pipeline. */
void announceLabelling(const CliContext &cli, vision::FrameSource &source,
                       const vision::Teacher &teacher, const vision::LabelOptions &o);
void reportLabelling(const CliContext &cli, const vision::LabelResult &labels,
                     const std::string &out);
/** Throws for labels that did not cover what was asked: cancelled, or stopped by an error. */
void requireWhole(const vision::LabelResult &labels, const std::string &out);
/** The labelling's --json fields. */
core::Json labelJson(const vision::LabelResult &r);

} // namespace edgetrain::app
