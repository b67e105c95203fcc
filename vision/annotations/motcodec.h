#pragma once

#include "vision/annotations/annotationcodec.h"

namespace edgetrain::vision {

/**
 * MOT Challenge gt.txt: `frame,id,bb_left,bb_top,bb_width,bb_height,conf,class,visibility`;
 * frames and boxes 1-based (MOT's convention: the top-left pixel is (1, 1)), 0-based in
 * EdgeTrain. conf 0 = ignore. class -1 or 1 (pedestrian) is the category; 2, 7, 8, 12 (person
 * on vehicle, static person, distractor, reflection) are ignore boxes, as MOT's evaluation
 * treats them; other classes (vehicles, occluders) are not the category and are left out. A MOT
 * file has no way to list a frame without a row: read makes a frame of every frame number that
 * has a row; write leaves out frames without boxes (losses() counts them).
 */
class MotCodec final : public AnnotationCodec
{
public:
    std::string_view name() const override { return "mot"; }
    GroundTruth read(const std::string &path, const ImportTarget &target) const override;
    void write(const GroundTruth &gt, const std::string &path) const override;
    std::string losses(const GroundTruth &gt) const override;
};

} // namespace edgetrain::vision
