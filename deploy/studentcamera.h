#pragma once

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
    /** Opens the camera once to check it; throws vision::SourceError naming it if it cannot. */
    explicit StudentCamera(QString spec);

    QString name() const override { return m_name; }
    /** Throws core::FormatError saying why the bytes are no such model, vision::SourceError if
     *  the camera cannot be opened now. */
    std::unique_ptr<net::Inference> open(const QByteArray &model) override;

private:
    QString m_spec;
    QString m_name;
};

} // namespace edgetrain::deploy
