#include "framestudent.h"

#include "core/detectionloss.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "cropdataset.h"

#include <opencv2/imgproc.hpp>

#include <charconv>

namespace edgetrain::vision {

FrameStudent::FrameStudent(core::Model &model) : m_model(model)
{
    const auto &loss = model.spec().loss();
    if (loss.type != core::LossSpec::Type::CenterNet)
        throw core::SpecError("model '" + model.spec().name() +
                              "' is not a full-frame detector (its loss is not centernet)");
    m_stride = loss.centernet.stride;
    const core::Shape &s = model.sampleShape();
    m_input = cv::Size(int(s[2]), int(s[1]));
}

std::vector<Detection> FrameStudent::detect(const cv::Mat &bgr, float threshold)
{
    cv::Mat resized;
    cv::resize(bgr, resized, m_input, 0, 0, cv::INTER_AREA);
    core::Tensor x(m_model.batchShape(1), core::MemoryCategory::Activations);
    CropDataset::toTensor(resized, x.data());
    core::PassContext ctx;
    ctx.training = false;
    const core::Tensor out = m_model.forward(x, ctx);
    const int h = int(out.shape()[2]), w = int(out.shape()[3]);
    core::DecodeOptions d;
    d.stride = m_stride;
    d.threshold = threshold;
    d.top_k = m_maxDetections;
    const auto boxes = core::DetectionLoss::decode(out.data(), h, w, d);
    const double kx = double(bgr.cols) / m_input.width, ky = double(bgr.rows) / m_input.height;
    std::vector<Detection> found;
    for (const auto &b : boxes) {
        const double x0 = std::max(0.0, b.x0 * kx), y0 = std::max(0.0, b.y0 * ky);
        const double x1 = std::min(double(bgr.cols), b.x1 * kx);
        const double y1 = std::min(double(bgr.rows), b.y1 * ky);
        if (x1 - x0 < 1 || y1 - y0 < 1)
            continue;
        found.push_back({cv::Rect2d(x0, y0, x1 - x0, y1 - y0), b.score, 0});
    }
    return nms_iou < 1.0 ? nonMaximumSuppression(std::move(found), nms_iou) : found;
}

std::unique_ptr<core::Model> FrameStudent::loadModel(const std::string &path)
{
    const core::Safetensors file = core::Safetensors::read(path);
    const auto spec = file.metadata().find("edgetrain.model_spec");
    if (spec == file.metadata().end())
        throw core::FormatError(path + ": no model spec in the metadata (edgetrain.model_spec)");
    auto model = std::make_unique<core::Model>(
        core::ModelSpec::fromJson(core::Json::parse(spec->second, path), path), 0);
    core::Safetensors::loadModel(*model, path);
    return model;
}

float FrameStudent::savedThreshold(const std::string &path)
{
    const core::Safetensors file = core::Safetensors::read(path);
    const auto it = file.metadata().find(kThresholdKey);
    if (it == file.metadata().end())
        return -1.0f;
    float value = -1.0f;
    const char *end = it->second.data() + it->second.size();
    const auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
    if (ec != std::errc() || ptr != end || !(value > 0.0f && value < 1.0f))
        throw core::FormatError(path + ": the operating threshold '" + it->second +
                                "' is not a number in (0, 1)");
    return value;
}

void FrameStudent::saveModel(core::Model &model, const std::string &path, float threshold)
{
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, threshold);
    core::Safetensors::saveModel(model, path, {{kThresholdKey, std::string(text, ec == std::errc() ? end : text)}});
}

} // namespace edgetrain::vision
