#include "studentdetector.h"

#include "core/softmaxcrossentropy.h"
#include "cropdataset.h"

#include <opencv2/imgproc.hpp>

#include <cmath>

namespace edgetrain::vision {

StudentDetector::StudentDetector(core::Model &model) : m_model(model)
{
    const core::Shape &s = model.sampleShape();
    m_input = cv::Size(int(s[2]), int(s[1]));
}

std::vector<Detection> StudentDetector::detect(const cv::Mat &bgr, const DetectorOptions &o)
{
    std::vector<Detection> found;
    struct Window
    {
        cv::Rect2d box;
    };
    std::vector<Window> pending;
    std::vector<float> batch;
    const std::size_t sample = std::size_t(3 * m_input.area());
    core::PassContext ctx;
    ctx.training = false;
    auto flush = [&] {
        if (pending.empty())
            return;
        const auto n = std::int64_t(pending.size());
        core::Tensor x(m_model.batchShape(n), core::MemoryCategory::Activations);
        std::copy(batch.begin(), batch.end(), x.data());
        const core::Tensor logits = m_model.forward(x, ctx);
        const std::int64_t classes = logits.shape()[1];
        for (std::int64_t i = 0; i < n; ++i) {
            const float *l = logits.data() + i * classes;
            const float p = 1.0f / (1.0f + std::exp(l[0] - l[1])); // softmax over the two classes
            if (p >= o.threshold)
                found.push_back({pending[std::size_t(i)].box, p, 0});
        }
        pending.clear();
        batch.clear();
    };
    const int scales = std::max(1, o.scales);
    for (int s = 0; s < scales; ++s) {
        const double h = scales == 1 ? o.min_height
                                     : o.min_height * std::pow(o.max_height / o.min_height,
                                                               double(s) / (scales - 1));
        // The crop around an object of height h is h * (1 + 2 context) tall: make that the input.
        const double k = double(m_input.height) / (h * (1 + 2 * o.context));
        cv::Mat scaled;
        cv::resize(bgr, scaled, cv::Size(), k, k, k < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
        if (scaled.cols < m_input.width || scaled.rows < m_input.height)
            continue;
        const int step = std::max(1, int(std::lround(o.stride * m_input.width)));
        for (int y = 0; y + m_input.height <= scaled.rows; y += step) {
            for (int x = 0; x + m_input.width <= scaled.cols; x += step) {
                const cv::Mat window = scaled(cv::Rect(x, y, m_input.width, m_input.height));
                const std::size_t at = batch.size();
                batch.resize(at + sample);
                CropDataset::toTensor(window, batch.data() + at);
                // back to frame coordinates, without the context margin
                const double cw = m_input.width / k, ch = m_input.height / k;
                const double bw = cw / (1 + 2 * o.context), bh = ch / (1 + 2 * o.context);
                pending.push_back(
                    {cv::Rect2d(x / k + (cw - bw) / 2, y / k + (ch - bh) / 2, bw, bh)});
                if (int(pending.size()) >= o.batch)
                    flush();
            }
        }
    }
    flush();
    return nonMaximumSuppression(std::move(found), o.nms);
}

} // namespace edgetrain::vision
