#pragma once

#include "core/model.h"

#include <map>
#include <string>

namespace edgetrain::vision {

/**
 * A core::Model as an ONNX graph, written with the ONNX project's own protobuf definitions
 * (onnx-ml.proto, Debian's libonnx-dev), opset kOpset. The graph takes kInputName
 * [batch, C, H, W] (batch symbolic) and gives kOutputName: the model's forward output, raw, as
 * the engine computes it in inference (batch norm with its running statistics).
 *
 * Layers: conv2d -> Conv, batchnorm2d -> BatchNormalization, relu -> Relu, maxpool2d -> MaxPool,
 * avgpool2d -> AveragePool (padding counted), upsample2d -> Resize (nearest, asymmetric, floor:
 * output pixel i reads input pixel i / factor), global_avg_pool -> GlobalAveragePool,
 * flatten -> Flatten, linear -> Gemm (transB), dropout -> nothing (identity in inference);
 * sequential stages are unrolled. Initializers and nodes carry the engine's parameter names
 * ("0.conv.weight", node "0.conv").
 */
class OnnxExport
{
public:
    static constexpr int kOpset = 13; // cv::dnn 4.6 imports Resize with scales from 11 on
    static constexpr const char *kInputName = "image";
    static constexpr const char *kOutputName = "heads";

    /** The serialised ModelProto, `metadata` as its metadata_props. Throws core::SpecError naming
     *  the layer (its full name and type) for a stage or layer with no ONNX form here (residual
     *  blocks). */
    static std::string serialise(core::Model &model,
                                 const std::map<std::string, std::string> &metadata);
    /** serialise() written with core::writeFileAtomically. Throws as serialise, and IoError. */
    static void write(core::Model &model, const std::map<std::string, std::string> &metadata,
                      const std::string &path);
    /** The metadata_props of an ONNX file. Throws IoError if it cannot be read, core::FormatError
     *  naming it if it is not an ONNX ModelProto. */
    static std::map<std::string, std::string> readMetadata(const std::string &path);
};

} // namespace edgetrain::vision
