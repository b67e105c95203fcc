#include "framestudent.h"

#include "core/detectionloss.h"
#include "core/error.h"
#include "core/layer.h"
#include "core/memorysimulation.h"
#include "core/numbertext.h"
#include "core/safetensors.h"
#include "cropdataset.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
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
    // inputBatch writes three colour planes per view whatever the model says: a model taking
    // another count would be read past, or written past, its input. (ModelSpec already holds
    // a centernet head to DetectionLoss::kChannels, which boxes() reads.)
    if (s.rank() != 3 || s[0] != 3)
        throw core::SpecError("model '" + model.spec().name() + "' takes input " + s.toString() +
                              "; a full-frame detector takes a colour frame [3, H, W]");
    m_input = cv::Size(int(s[2]), int(s[1]));
}

namespace {

/** The bytes Safetensors::saveModel writes for a model built from `spec` (its parameters and
 *  buffers), counted on virtual tensors: nothing is allocated. */
std::int64_t storedBytes(const core::ModelSpec &spec)
{
    core::MemorySimulation virtualWeights;
    std::int64_t bytes = 0;
    for (const auto &stage : spec.buildStages())
        stage->forEachLayer([&](const std::string &, core::Layer &layer) {
            for (const core::Parameter *p : layer.parameters())
                bytes += p->value.numel() * std::int64_t(sizeof(float));
            for (const core::LayerBuffer &b : layer.buffers())
                bytes += b.tensor ? b.tensor->numel() * std::int64_t(sizeof(float))
                                  : std::int64_t(sizeof(std::int64_t));
        });
    return bytes;
}

double iou(const core::DecodedBox &a, const core::DecodedBox &b)
{
    const double iw = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
    const double ih = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
    if (iw <= 0 || ih <= 0)
        return 0.0;
    const double inter = iw * ih;
    return inter / ((a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter);
}

} // namespace

std::vector<core::DecodedBox> FrameStudent::fuseViews(const std::vector<core::DecodedBox> &frame,
                                                      const std::vector<core::DecodedBox> &mirrored,
                                                      double minIou)
{
    struct Candidate
    {
        core::DecodedBox box;
        int view;
        bool used = false;
    };
    std::vector<Candidate> pool;
    for (const auto &b : frame)
        pool.push_back({b, 0});
    for (const auto &b : mirrored)
        pool.push_back({b, 1});
    std::stable_sort(pool.begin(), pool.end(), [](const Candidate &a, const Candidate &b) {
        return a.box.score > b.box.score;
    });
    std::vector<core::DecodedBox> fused;
    for (std::size_t i = 0; i < pool.size(); ++i) {
        if (pool[i].used)
            continue;
        pool[i].used = true;
        const core::DecodedBox &a = pool[i].box;
        core::DecodedBox out = a;
        out.score = a.score / 2;
        for (std::size_t j = i + 1; j < pool.size(); ++j) {
            if (pool[j].used || pool[j].view == pool[i].view || iou(a, pool[j].box) < minIou)
                continue;
            pool[j].used = true;
            const core::DecodedBox &b = pool[j].box;
            const float wa = a.score / (a.score + b.score), wb = 1.0f - wa;
            out = {wa * a.x0 + wb * b.x0, wa * a.y0 + wb * b.y0, wa * a.x1 + wb * b.x1,
                   wa * a.y1 + wb * b.y1, (a.score + b.score) / 2};
            break;
        }
        fused.push_back(out);
    }
    return fused;
}

FrameStudent::Decoding FrameStudent::decoding() const
{
    Decoding d;
    d.input = m_input;
    d.stride = m_stride;
    d.top_k = m_maxDetections;
    d.nms_iou = nms_iou;
    d.mirror = mirror;
    d.mirror_iou = mirror_iou;
    return d;
}

void FrameStudent::inputBatch(const cv::Mat &bgr, cv::Size input, bool mirror, float *out)
{
    cv::Mat resized;
    cv::resize(bgr, resized, input, 0, 0, cv::INTER_AREA);
    CropDataset::toTensor(resized, out);
    if (mirror) {
        cv::Mat flipped;
        cv::flip(resized, flipped, 1);
        CropDataset::toTensor(flipped, out + 3 * std::int64_t(input.area()));
    }
}

std::vector<Detection> FrameStudent::detect(const cv::Mat &bgr, float threshold)
{
    const int views = mirror ? 2 : 1;
    core::Tensor x(m_model.batchShape(views), core::MemoryCategory::Activations);
    inputBatch(bgr, m_input, mirror, x.data());
    core::PassContext ctx;
    ctx.training = false;
    const core::Tensor out = m_model.forward(x, ctx);
    return boxes(out.data(), int(out.shape()[2]), int(out.shape()[3]), bgr.size(), threshold,
                 decoding());
}

std::vector<Detection> FrameStudent::boxes(const float *out, int h, int w, cv::Size frame,
                                           float threshold, const Decoding &decoding)
{
    const bool mirror = decoding.mirror;
    const cv::Size input = decoding.input;
    core::DecodeOptions d;
    d.stride = decoding.stride;
    // A box's fused score is the mean of its two views': each view is read down to half the
    // threshold so that a partner is not lost.
    d.threshold = mirror ? threshold / 2 : threshold;
    d.top_k = decoding.top_k;
    std::vector<core::DecodedBox> boxes = core::DetectionLoss::decode(out, h, w, d);
    if (mirror) {
        std::vector<core::DecodedBox> back = core::DetectionLoss::decode(
            out + std::int64_t(core::DetectionLoss::kChannels) * h * w, h, w, d);
        for (core::DecodedBox &b : back)
            b = {float(input.width) - b.x1, b.y0, float(input.width) - b.x0, b.y1, b.score};
        boxes = fuseViews(boxes, back, decoding.mirror_iou);
        std::erase_if(boxes, [&](const core::DecodedBox &b) { return b.score < threshold; });
        std::stable_sort(
            boxes.begin(), boxes.end(),
            [](const core::DecodedBox &a, const core::DecodedBox &b) { return a.score > b.score; });
        if (boxes.size() > std::size_t(decoding.top_k))
            boxes.resize(std::size_t(decoding.top_k));
    }
    const double kx = double(frame.width) / input.width, ky = double(frame.height) / input.height;
    std::vector<Detection> found;
    for (const auto &b : boxes) {
        const double x0 = std::max(0.0, b.x0 * kx), y0 = std::max(0.0, b.y0 * ky);
        const double x1 = std::min(double(frame.width), b.x1 * kx);
        const double y1 = std::min(double(frame.height), b.y1 * ky);
        if (x1 - x0 < 1 || y1 - y0 < 1)
            continue;
        found.push_back({cv::Rect2d(x0, y0, x1 - x0, y1 - y0), b.score, 0});
    }
    return decoding.nms_iou < 1.0 ? nonMaximumSuppression(std::move(found), decoding.nms_iou)
                                  : found;
}

std::unique_ptr<core::Model> FrameStudent::loadModel(const std::string &path)
{
    const core::Safetensors file = core::Safetensors::read(path);
    const auto found = file.metadata().find("edgetrain.model_spec");
    if (found == file.metadata().end())
        throw core::FormatError(path + ": no model spec in the metadata (edgetrain.model_spec)");
    const core::ModelSpec spec =
        core::ModelSpec::fromJson(core::Json::parse(found->second, path), path);
    // Building the model allocates and initialises every parameter the spec declares: a small
    // file must not make the reader allocate gigabytes before loadModel finds its tensors short.
    std::int64_t held = 0;
    for (const auto &[name, entry] : file.entries())
        held += std::int64_t(entry.bytes.size());
    if (const std::int64_t needed = storedBytes(spec); needed > held)
        throw core::FormatError(path + ": its model spec needs " + core::NumberText::bytes(needed) +
                                " of weights, the file holds " + core::NumberText::bytes(held));
    auto model = std::make_unique<core::Model>(spec, 0);
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

void FrameStudent::saveModel(core::Model &model, const std::string &path, float threshold,
                             bool mirror)
{
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, threshold);
    core::Safetensors::saveModel(
        model, path,
        {{kThresholdKey, std::string(text, ec == std::errc() ? end : text)},
         {kViewsKey, mirror ? "mirror" : "frame"}});
}

bool FrameStudent::savedMirror(const std::string &path)
{
    const core::Safetensors file = core::Safetensors::read(path);
    const auto it = file.metadata().find(kViewsKey);
    return it != file.metadata().end() ? it->second == "mirror"
                                       : !file.metadata().count(kThresholdKey);
}

} // namespace edgetrain::vision
