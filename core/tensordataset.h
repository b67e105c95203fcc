#pragma once

#include "dataset.h"

#include <vector>

namespace edgetrain::core {

/** A dataset held in memory as normalised float samples and int labels. */
class TensorDataset : public Dataset
{
public:
    /**
     * `labels` holds labelWidth values per sample. Throws Error if the sizes disagree, or (with
     * labelWidth 1) a label is outside [0, classes). Wider labels are records whose meaning
     * the model's loss knows (DetectionLoss checks its own when it reads them).
     */
    TensorDataset(std::string description, Shape sampleShape, int classes,
                  std::vector<float> images, std::vector<std::int32_t> labels, int labelWidth = 1);

    std::int64_t size() const override { return std::int64_t(m_labels.size()) / m_labelWidth; }
    int labelWidth() const override { return m_labelWidth; }
    Shape sampleShape() const override { return m_sampleShape; }
    int classCount() const override { return m_classes; }
    std::string description() const override { return m_description; }
    void gather(const std::int64_t *indices, std::int64_t count, float *images,
                std::int32_t *labels) const override;

    /** Keeps only the first n samples (n >= size() keeps all). */
    void truncate(std::int64_t n);
    /** A dataset of the samples [begin, end), copied. */
    TensorDataset slice(std::int64_t begin, std::int64_t end) const;
    /** size() * labelWidth() values. */
    const std::vector<std::int32_t> &labels() const { return m_labels; }
    const std::vector<float> &images() const { return m_images; }

private:
    std::string m_description;
    Shape m_sampleShape;
    int m_classes;
    std::vector<float> m_images;
    std::vector<std::int32_t> m_labels;
    int m_labelWidth = 1;
};

} // namespace edgetrain::core
