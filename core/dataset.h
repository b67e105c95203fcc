#pragma once

#include "shape.h"

#include <cstdint>
#include <string>

namespace edgetrain::core {

/**
 * Labelled samples: a class per sample (labelWidth() 1), or a fixed-width int32 record per
 * sample (a detector's boxes, DetectionLoss's layout). Implementations: TensorDataset (in memory;
 * what IDX files and crop folders are loaded into) and views over part of another dataset (shards,
 * limits).
 */
class Dataset
{
public:
    virtual ~Dataset() = default;

    virtual std::int64_t size() const = 0;
    virtual Shape sampleShape() const = 0; // e.g. [1, 28, 28]
    virtual int classCount() const = 0;
    virtual std::string description() const = 0;
    /** int32 label values per sample (1: a class index). */
    virtual int labelWidth() const { return 1; }

    /**
     * Copies samples indices[0..count) into images (count x sampleShape floats, normalised) and
     * labels (count x labelWidth() values). Indices must be < size() (asserted: they come from the
     * engine, not from input).
     */
    virtual void gather(const std::int64_t *indices, std::int64_t count, float *images,
                        std::int32_t *labels) const = 0;
};

/** Samples [begin, end) of another dataset, without copying (the dataset must outlive it). */
class RangeView : public Dataset
{
public:
    RangeView(const Dataset &data, std::int64_t begin, std::int64_t end)
        : m_data(data), m_begin(begin), m_end(end)
    {}
    std::int64_t size() const override { return m_end - m_begin; }
    Shape sampleShape() const override { return m_data.sampleShape(); }
    int classCount() const override { return m_data.classCount(); }
    int labelWidth() const override { return m_data.labelWidth(); }
    std::string description() const override
    {
        return m_data.description() + " [" + std::to_string(m_begin) + ", " +
               std::to_string(m_end) + ")";
    }
    void gather(const std::int64_t *indices, std::int64_t count, float *images,
                std::int32_t *labels) const override;

private:
    const Dataset &m_data;
    std::int64_t m_begin, m_end;
};

} // namespace edgetrain::core
