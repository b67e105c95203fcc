#pragma once

#include "vision/annotations/annotationcodec.h"

namespace edgetrain::vision {

/**
 * YOLO: a folder of `frame_000123.txt` (one per frame, even empty), lines `class cx cy w h`
 * normalised to [0, 1] by the frame size, and classes.txt (one name a line; without it, class 0
 * is the category). YOLO has no ignore boxes: write drops them (losses() says how many); a class
 * named "ignore" reads as ignore boxes. write needs a new or empty folder.
 */
class YoloCodec final : public AnnotationCodec
{
public:
    std::string_view name() const override { return "yolo"; }
    GroundTruth read(const std::string &path, const ImportTarget &target) const override;
    void write(const GroundTruth &gt, const std::string &path) const override;
    std::string losses(const GroundTruth &gt) const override;
};

} // namespace edgetrain::vision
