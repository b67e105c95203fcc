#pragma once

#include <opencv2/core.hpp>

#include <string>
#include <string_view>

namespace edgetrain::vision {

class GroundTruth;

/**
 * The annotation formats people exchange boxes in; each has its codec (below), in a file of its
 * own that says how the format maps to a GroundTruth: MotCodec (MOT Challenge gt.txt),
 * CocoCodec (COCO JSON), CvatCodec (CVAT for images 1.1 XML), YoloCodec (a folder of YOLO
 * .txt files). A COCO/CVAT label or YOLO class that is neither the category nor "ignore" is an
 * error; a box labelled "ignore" is neither required nor a false detection when found.
 */
enum class AnnotationFormat { Mot, Coco, Cvat, Yolo };

/** "mot" | "coco" | "cvat" | "yolo"; throws core::Error listing them. */
AnnotationFormat annotationFormat(const std::string &name);
std::string annotationFormatName(AnnotationFormat format);

/** The video an import is for: what bounds the frame numbers and boxes it reads. */
struct ImportTarget
{
    cv::Size frame_size; // required: a box outside it by more than 1 px is an error
    int frame_count = 0; // > 0: frame numbers must be below it; <= 0: unknown, unbounded
    std::string category = "person";
};

/**
 * One annotation format, read into and written from a GroundTruth. The codecs hold no state;
 * annotationCodec() hands out the one instance of each. GroundTruth::importFile, exportFile and
 * exportLosses call them and state the contract they keep (messages that name the file, line or
 * field; nothing half-imported; locale-free numbers).
 */
class AnnotationCodec
{
public:
    virtual ~AnnotationCodec() = default;
    /** The name the CLI's --format takes ("mot"). */
    virtual std::string_view name() const = 0;
    /** The frames and boxes of `path` (a folder for YOLO), every frame done; the caller sets
     *  the category and frame size. Throws core::FormatError / core::IoError. */
    virtual GroundTruth read(const std::string &path, const ImportTarget &target) const = 0;
    /** Writes every frame of `truth` to `path`. Throws core::IoError. */
    virtual void write(const GroundTruth &truth, const std::string &path) const = 0;
    /** What write() cannot carry for `truth`, for the user; "" if nothing. */
    virtual std::string losses(const GroundTruth &truth) const = 0;
};

const AnnotationCodec &annotationCodec(AnnotationFormat format);

} // namespace edgetrain::vision
