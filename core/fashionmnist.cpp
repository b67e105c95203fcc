#include "fashionmnist.h"

#include "error.h"
#include "idxfile.h"

namespace edgetrain::core {

TensorDataset FashionMnist::load(const std::string &directory, Split split, std::int64_t limit)
{
    const std::string prefix = directory + (split == Split::Train ? "/train" : "/t10k");
    const std::string imagePath = prefix + "-images-idx3-ubyte.gz";
    const std::string labelPath = prefix + "-labels-idx1-ubyte.gz";
    const IdxFile images = IdxFile::read(imagePath);
    const IdxFile labels = IdxFile::read(labelPath);
    if (images.dims.size() != 3)
        throw FormatError("'" + imagePath +
                          "': expected images [count, rows, columns], found rank " +
                          std::to_string(images.dims.size()));
    if (labels.dims.size() != 1)
        throw FormatError("'" + labelPath + "': expected labels [count], found rank " +
                          std::to_string(labels.dims.size()));
    if (images.dims[0] != labels.dims[0])
        throw FormatError("'" + imagePath + "' holds " + std::to_string(images.dims[0]) +
                          " images but '" + labelPath + "' holds " +
                          std::to_string(labels.dims[0]) + " labels");
    std::int64_t count = images.dims[0];
    if (limit > 0 && limit < count)
        count = limit;
    const std::int64_t pixels = images.dims[1] * images.dims[2];
    std::vector<float> x(static_cast<std::size_t>(count * pixels));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = (float(images.values[i]) / 255.0f - kMean) / kStd;
    std::vector<std::int32_t> y(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (labels.values[i] > 9)
            throw FormatError("'" + labelPath + "': label " + std::to_string(labels.values[i]) +
                              " of sample " + std::to_string(i) + " (offset " +
                              std::to_string(8 + i) + ") is not a Fashion-MNIST class (0-9)");
        y[i] = labels.values[i];
    }
    return TensorDataset("Fashion-MNIST " + std::string(split == Split::Train ? "train" : "test"),
                         Shape{1, images.dims[1], images.dims[2]}, 10, std::move(x), std::move(y));
}

} // namespace edgetrain::core
