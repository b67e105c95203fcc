#include "studentexport.h"

#include "core/detectionloss.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "onnxexport.h"
#include "vision/studentteacher.h"

#include <charconv>
#include <filesystem>

namespace edgetrain::vision {

namespace {

const char *const kThreshold = FrameStudent::kThresholdKey;
const char *const kViews = FrameStudent::kViewsKey;
constexpr const char *kWidth = "edgetrain.input.width";
constexpr const char *kHeight = "edgetrain.input.height";
constexpr const char *kStride = "edgetrain.output.stride";
constexpr const char *kTopK = "edgetrain.decode.top_k";
constexpr const char *kNmsIou = "edgetrain.decode.nms_iou";
constexpr const char *kMirrorIou = "edgetrain.decode.mirror_iou";

/** Locale-free, the shortest text that reads back as the same value. */
std::string number(double value)
{
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
    return std::string(text, ec == std::errc() ? end : text);
}

std::string number(float value)
{
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
    return std::string(text, ec == std::errc() ? end : text);
}

double readNumber(const std::map<std::string, std::string> &metadata, const char *key, double lo,
                  double hi, const std::string &source)
{
    const auto it = metadata.find(key);
    if (it == metadata.end())
        throw core::FormatError(source + ": the metadata has no '" + key + "'");
    double value = 0;
    const char *end = it->second.data() + it->second.size();
    const auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
    if (ec != std::errc() || ptr != end || !(value >= lo && value <= hi))
        throw core::FormatError(source + ": metadata '" + key + "' is '" + it->second +
                                "', not a number in [" + number(lo) + ", " + number(hi) + "]");
    return value;
}

} // namespace

StudentExport::Format StudentExport::parseFormat(const std::string &text)
{
    if (text == "onnx")
        return Format::Onnx;
    if (text == "safetensors")
        return Format::Safetensors;
    throw core::SpecError("the export format must be onnx or safetensors, not '" + text + "'");
}

StudentExport::Format StudentExport::formatOf(const std::string &path)
{
    const std::string suffix = std::filesystem::path(path).extension().string();
    if (suffix == ".onnx")
        return Format::Onnx;
    if (suffix == ".safetensors")
        return Format::Safetensors;
    throw core::SpecError("'" + path + "' ends neither in .onnx nor in .safetensors");
}

std::map<std::string, std::string> StudentExport::metadata(const core::Model &model,
                                                           const FrameStudent::Decoding &d,
                                                           float threshold, bool calibrated)
{
    return {
        {kFormatKey, kFormat},
        {"edgetrain.model_spec", model.spec().toJson().dump()},
        {kThreshold, number(threshold)},
        {"edgetrain.threshold_source", calibrated ? "calibrated" : "default"},
        {kViews, d.mirror ? "mirror" : "frame"},
        {"edgetrain.input.name", OnnxExport::kInputName},
        {kWidth, number(double(d.input.width))},
        {kHeight, number(double(d.input.height))},
        {"edgetrain.input.layout", "NCHW"},
        {"edgetrain.input.channel_order", "BGR"},
        {"edgetrain.input.resize", "the whole frame to width x height, OpenCV INTER_AREA"},
        {"edgetrain.input.normalisation", "(pixel / 255 - mean[c]) / std[c]"},
        {"edgetrain.input.mean", "0.5,0.5,0.5"},
        {"edgetrain.input.std", "0.25,0.25,0.25"},
        {"edgetrain.output.name", OnnxExport::kOutputName},
        {"edgetrain.output.channels", "heatmap_logit,log_width,log_height,offset_x,offset_y"},
        {kStride, number(double(d.stride))},
        {"edgetrain.decode.peaks",
         "score = sigmoid(heatmap_logit); a cell is a box if score >= threshold and no cell of "
         "its 3x3 neighbourhood is greater"},
        {"edgetrain.decode.box",
         "centre ((col + offset_x) * stride, (row + offset_y) * stride), size (exp(log_width) * "
         "stride, exp(log_height) * stride), in input pixels; to frame pixels times frame / "
         "input, clipped to the frame, boxes under 1 pixel dropped"},
        {kTopK, number(double(d.top_k))},
        {"edgetrain.decode.mirror",
         "with operating_views = mirror the batch is the frame and its horizontal mirror; each "
         "view's boxes at threshold / 2, top_k each, the mirror's mapped back (x -> width - x); "
         "from the highest score down, a box takes the best-scored free box of the other view "
         "with IoU >= mirror_iou: their score-weighted average, scored by the mean of both; a "
         "box alone keeps half its score; then score >= threshold, top_k"},
        {kMirrorIou, number(d.mirror_iou)},
        {"edgetrain.decode.nms",
         "greedy from the highest score in frame pixels: a box is dropped if its IoU with a kept "
         "box is over nms_iou or their intersection is over 0.7 of the smaller box's area"},
        {kNmsIou, number(d.nms_iou)},
    };
}

bool StudentExport::isStudent(const std::map<std::string, std::string> &metadata)
{
    const auto it = metadata.find(kFormatKey);
    return it != metadata.end() && it->second.rfind("centernet-student/", 0) == 0;
}

StudentExport::OperatingPoint
StudentExport::operatingPoint(const std::map<std::string, std::string> &metadata,
                              const std::string &source)
{
    const auto format = metadata.find(kFormatKey);
    if (format == metadata.end() || format->second != kFormat)
        throw core::FormatError(source + ": '" + kFormatKey + "' is '" +
                                (format == metadata.end() ? std::string() : format->second) +
                                "'; this EdgeTrain reads " + kFormat);
    OperatingPoint p;
    p.decoding.input = cv::Size(int(readNumber(metadata, kWidth, 1, 1 << 16, source)),
                                int(readNumber(metadata, kHeight, 1, 1 << 16, source)));
    p.decoding.stride = int(readNumber(metadata, kStride, 1, 64, source));
    p.decoding.top_k = int(readNumber(metadata, kTopK, 1, 1 << 20, source));
    p.decoding.nms_iou = readNumber(metadata, kNmsIou, 0, 1, source);
    p.decoding.mirror_iou = readNumber(metadata, kMirrorIou, 0, 1, source);
    p.threshold = float(readNumber(metadata, kThreshold, 0, 1, source));
    const auto views = metadata.find(kViews);
    if (views == metadata.end() || (views->second != "mirror" && views->second != "frame"))
        throw core::FormatError(source + ": metadata '" + kViews + "' must be mirror or frame");
    p.decoding.mirror = views->second == "mirror";
    return p;
}

std::string StudentExport::exportSession(const std::string &sessionDir, Format format,
                                         const std::string &outPath)
{
    const std::string weights = StudentTeacher::weightsPath(sessionDir);
    std::unique_ptr<core::Model> model = FrameStudent::loadModel(weights);
    FrameStudent student(*model);
    const float saved = FrameStudent::savedThreshold(weights);
    student.mirror = FrameStudent::savedMirror(weights);
    const float threshold = saved > 0 ? saved : 0.3f; // StudentTeacher's default
    const auto meta = metadata(*model, student.decoding(), threshold, saved > 0);
    if (format == Format::Onnx) {
        OnnxExport::write(*model, meta, outPath);
    } else {
        core::Safetensors file = core::Safetensors::read(weights);
        for (const auto &[key, value] : meta)
            file.metadata()[key] = value;
        file.write(outPath);
    }
    const cv::Size in = student.inputSize();
    return "wrote " + outPath + " (" +
           (format == Format::Onnx ? "ONNX opset " + std::to_string(OnnxExport::kOpset)
                                   : std::string("safetensors")) +
           ", input " + std::to_string(in.width) + "x" + std::to_string(in.height) +
           ", threshold " + number(threshold) + (saved > 0 ? " calibrated" : " default") + ", " +
           (student.mirror ? "frame + mirror view" : "frame alone") + ")";
}

} // namespace edgetrain::vision
