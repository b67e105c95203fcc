#pragma once

#include "dataset.h"

#include <vector>

namespace edgetrain::core {

/** A dataset held in memory as normalised float samples and int labels. */
class TensorDataset : public Dataset
{
public:
    /** Throws Error if the sizes disagree or a label is outside [0, classes). */
    TensorDataset(std::string description, Shape sampleShape, int classes,
                  std::vector<float> images, std::vector<std::int32_t> labels);

    std::int64_t size() const override { return std::int64_t(m_labels.size()); }
    Shape sampleShape() const override { return m_sampleShape; }
    int classCount() const override { return m_classes; }
    std::string description() const override { return m_description; }
    void gather(const std::int64_t *indices, std::int64_t count, float *images,
                std::int32_t *labels) const override;

    /** Keeps only the first n samples (n >= size() keeps all). */
    void truncate(std::int64_t n);
    /** A dataset of the samples [begin, end), copied. */
    TensorDataset slice(std::int64_t begin, std::int64_t end) const;
    const std::vector<std::int32_t> &labels() const { return m_labels; }
    const std::vector<float> &images() const { return m_images; }

private:
    std::string m_description;
    Shape m_sampleShape;
    int m_classes;
    std::vector<float> m_images;
    std::vector<std::int32_t> m_labels;
};

} // namespace edgetrain::core
