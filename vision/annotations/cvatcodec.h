#pragma once

#include "vision/annotations/annotationcodec.h"

namespace edgetrain::vision {

/**
 * CVAT for images XML 1.1: <image id name width height> with <box label xtl ytl xbr ybr
 * occluded> children; the frame is the number in `name`, else `id`. A box with the label
 * "ignore" is an ignore box (the convention we write; CVAT has no ignore flag); an
 * <attribute name="track_id"> child carries the id. Every <image> is a frame. Read with libxml2.
 */
class CvatCodec final : public AnnotationCodec
{
public:
    std::string_view name() const override { return "cvat"; }
    GroundTruth read(const std::string &path, const ImportTarget &target) const override;
    void write(const GroundTruth &gt, const std::string &path) const override;
    std::string losses(const GroundTruth &gt) const override;
};

} // namespace edgetrain::vision
