#include "tensordataset.h"

#include "error.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace edgetrain::core {

TensorDataset::TensorDataset(std::string description, Shape sampleShape, int classes,
                             std::vector<float> images, std::vector<std::int32_t> labels,
                             int labelWidth)
    : m_description(std::move(description)), m_sampleShape(std::move(sampleShape)),
      m_classes(classes), m_images(std::move(images)), m_labels(std::move(labels)),
      m_labelWidth(labelWidth)
{
    if (classes < 1)
        throw Error(m_description + ": a dataset needs at least one class");
    if (labelWidth < 1 || labelWidth > (1 << 20))
        throw Error(m_description + ": label width " + std::to_string(labelWidth) +
                    " is outside [1, 2^20]");
    if (m_labels.size() % std::size_t(labelWidth) != 0)
        throw Error(m_description + ": " + std::to_string(m_labels.size()) +
                    " label values are not a multiple of the label width " +
                    std::to_string(labelWidth));
    const std::int64_t samples = std::int64_t(m_labels.size()) / labelWidth;
    if (std::int64_t(m_images.size()) != samples * m_sampleShape.numel())
        throw Error(m_description + ": " + std::to_string(samples) + " labels but " +
                    std::to_string(m_images.size()) + " image values (expected " +
                    std::to_string(samples * m_sampleShape.numel()) + ")");
    for (std::size_t i = 0; i < m_labels.size() && labelWidth == 1; ++i)
        if (m_labels[i] < 0 || m_labels[i] >= classes)
            throw Error(m_description + ": label " + std::to_string(m_labels[i]) + " of sample " +
                        std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
}

void TensorDataset::gather(const std::int64_t *indices, std::int64_t count, float *images,
                           std::int32_t *labels) const
{
    const std::int64_t n = m_sampleShape.numel();
    for (std::int64_t i = 0; i < count; ++i) {
        assert(indices[i] >= 0 && indices[i] < size());
        std::memcpy(images + i * n, m_images.data() + indices[i] * n,
                    sizeof(float) * std::size_t(n));
        std::copy_n(m_labels.begin() + indices[i] * m_labelWidth, m_labelWidth,
                    labels + i * m_labelWidth);
    }
}

void TensorDataset::truncate(std::int64_t n)
{
    if (n < 0 || n >= size())
        return;
    m_labels.resize(std::size_t(n * m_labelWidth));
    m_images.resize(std::size_t(n * m_sampleShape.numel()));
}

TensorDataset TensorDataset::slice(std::int64_t begin, std::int64_t end) const
{
    begin = std::clamp<std::int64_t>(begin, 0, size());
    end = std::clamp<std::int64_t>(end, begin, size());
    const std::int64_t n = m_sampleShape.numel();
    return TensorDataset(
        m_description, m_sampleShape, m_classes,
        std::vector<float>(m_images.begin() + begin * n, m_images.begin() + end * n),
        std::vector<std::int32_t>(m_labels.begin() + begin * m_labelWidth,
                                  m_labels.begin() + end * m_labelWidth),
        m_labelWidth);
}

void RangeView::gather(const std::int64_t *indices, std::int64_t count, float *images,
                       std::int32_t *labels) const
{
    std::vector<std::int64_t> shifted(indices, indices + count);
    for (auto &i : shifted) {
        assert(i >= 0 && i < size());
        i += m_begin;
    }
    m_data.gather(shifted.data(), count, images, labels);
}

} // namespace edgetrain::core
