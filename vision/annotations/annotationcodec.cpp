#include "vision/annotations/annotationcodec.h"

#include "core/error.h"
#include "vision/annotations/cococodec.h"
#include "vision/annotations/cvatcodec.h"
#include "vision/annotations/motcodec.h"
#include "vision/annotations/yolocodec.h"

#include <array>

namespace edgetrain::vision {

namespace {

constexpr std::array kFormats = {AnnotationFormat::Mot, AnnotationFormat::Coco,
                                 AnnotationFormat::Cvat, AnnotationFormat::Yolo};

} // namespace

const AnnotationCodec &annotationCodec(AnnotationFormat format)
{
    static const MotCodec mot;
    static const CocoCodec coco;
    static const CvatCodec cvat;
    static const YoloCodec yolo;
    switch (format) {
    case AnnotationFormat::Mot:
        return mot;
    case AnnotationFormat::Coco:
        return coco;
    case AnnotationFormat::Cvat:
        return cvat;
    case AnnotationFormat::Yolo:
        return yolo;
    }
    throw core::Error("unknown annotation format " + std::to_string(int(format)));
}

AnnotationFormat annotationFormat(const std::string &name)
{
    std::string known;
    for (AnnotationFormat format : kFormats) {
        const std::string_view codecName = annotationCodec(format).name();
        if (name == codecName)
            return format;
        known += (known.empty() ? "" : ", ") + std::string(codecName);
    }
    throw core::Error("unknown annotation format '" + name + "' (known: " + known + ")");
}

std::string annotationFormatName(AnnotationFormat format)
{
    return std::string(annotationCodec(format).name());
}

} // namespace edgetrain::vision
