#pragma once

#include "tensordataset.h"

#include <string>

namespace edgetrain::core {

/**
 * Fashion-MNIST from its four IDX .gz files (Debian: dataset-fashion-mnist,
 * /usr/share/datasets/fashion-mnist). Pixels are scaled to [0, 1], then normalised with the
 * training set's mean 0.2860 and std 0.3530, as the PyTorch reference does.
 */
class FashionMnist
{
public:
    static constexpr const char *kDefaultDirectory = "/usr/share/datasets/fashion-mnist";
    static constexpr float kMean = 0.2860f;
    static constexpr float kStd = 0.3530f;

    enum class Split { Train, Test };

    /**
     * Loads a split (limit > 0 keeps only the first `limit` samples). Throws IoError if a file is
     * missing, FormatError if it is truncated or its images and labels do not match.
     */
    static TensorDataset load(const std::string &directory, Split split, std::int64_t limit = 0);
};

} // namespace edgetrain::core
