#pragma once

#include "deploy/pacedsource.h"
#include "net/agent/inferencesource.h"

#include <QString>

namespace edgetrain::deploy {

/**
 * The camera a node runs deployed students on (edgetrain-node --camera camera:0|FILE|FOLDER): a
 * model arriving for it must be a safetensors file whose metadata holds an EdgeTrain model spec
 * of a centernet detector (what the Train step saves as detector.safetensors).
 */
class StudentCamera : public net::InferenceSource
{
public:
    /** A model whose input is wider or higher than this is refused: one frame at that size
     *  already takes hundreds of MiB of activations, more than a device running a camera has
     *  to spare (the Train step's students take a few hundred pixels). */
    static constexpr int kMaxInputSide = 2048; // pixels

    /** Opens the camera once to check it; throws vision::SourceError naming it if it cannot.
     *  `rate_fps`: the pace of a file or folder (PacedSource's). */
    explicit StudentCamera(QString spec, double rate_fps = PacedSource::kOwnRate);

    QString name() const override { return m_name; }
    /** Throws core::FormatError saying why the bytes are no such model (also: an input past
     *  kMaxInputSide, or a model that fails its first pass on a blank frame),
     *  vision::SourceError if the camera cannot be opened now. */
    std::unique_ptr<net::Inference> open(const QByteArray &model) override;

private:
    QString m_spec;
    double m_rateFps;
    QString m_name;
};

} // namespace edgetrain::deploy
