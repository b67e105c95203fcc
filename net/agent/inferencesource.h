#pragma once

#include "net/agent/inference.h"

#include <QByteArray>
#include <QString>

#include <memory>

namespace edgetrain::net {

/**
 * The camera a node may run a deployed model on, configured on the node (edgetrain-node
 * --camera), never chosen by the coordinator. DeploymentHost has checked a model's size and
 * hash before it asks open() for the rest.
 */
class InferenceSource
{
public:
    virtual ~InferenceSource() = default;
    /** The camera as the node names it in reports ("vtest.avi", "camera:0"). */
    virtual QString name() const = 0;
    /**
     * Checks that `model` (a whole file's bytes) is a model this node can run and opens the
     * camera for it.
     * Throws std::exception with a sentence that says what is wrong (not a model file, not a
     * detector, truncated, the camera cannot be opened); the node sends it to the coordinator.
     */
    virtual std::unique_ptr<Inference> open(const QByteArray &model) = 0;
};

} // namespace edgetrain::net
