#include "tensordataset.h"

#include "error.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace edgetrain::core {

TensorDataset::TensorDataset(std::string description, Shape sampleShape, int classes,
                             std::vector<float> images, std::vector<std::int32_t> labels)
    : m_description(std::move(description)), m_sampleShape(std::move(sampleShape)),
      m_classes(classes), m_images(std::move(images)), m_labels(std::move(labels))
{
    if (classes < 1)
        throw Error(m_description + ": a dataset needs at least one class");
    if (std::int64_t(m_images.size()) != std::int64_t(m_labels.size()) * m_sampleShape.numel())
        throw Error(m_description + ": " + std::to_string(m_labels.size()) + " labels but " +
                    std::to_string(m_images.size()) + " image values (expected " +
                    std::to_string(std::int64_t(m_labels.size()) * m_sampleShape.numel()) + ")");
    for (std::size_t i = 0; i < m_labels.size(); ++i)
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
        labels[i] = m_labels[std::size_t(indices[i])];
    }
}

void TensorDataset::truncate(std::int64_t n)
{
    if (n < 0 || n >= size())
        return;
    m_labels.resize(std::size_t(n));
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
        std::vector<std::int32_t>(m_labels.begin() + begin, m_labels.begin() + end));
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
