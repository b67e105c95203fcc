#pragma once

#include "vision/annotations/annotationcodec.h"

namespace edgetrain::vision {

/**
 * COCO JSON: images {id, file_name, width, height, frame_index}, annotations {id, image_id,
 * bbox [x,y,w,h], category_id, iscrowd, area, track_id}, categories. iscrowd 1 or a category
 * named "ignore" = ignore. An image's frame is its frame_index field if it has one, else the
 * (last) number in its file name (`frame_000123.png`: 123, 0-based as written on export). Every
 * image is a frame, with or without boxes.
 */
class CocoCodec final : public AnnotationCodec
{
public:
    std::string_view name() const override { return "coco"; }
    GroundTruth read(const std::string &path, const ImportTarget &target) const override;
    void write(const GroundTruth &gt, const std::string &path) const override;
    std::string losses(const GroundTruth &gt) const override;
};

} // namespace edgetrain::vision
