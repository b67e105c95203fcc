#pragma once

#include <QByteArray>
#include <QString>

namespace edgetrain::net {

/** One frame as the deployed model ran on it. */
struct InferenceFrame
{
    double latency_ms = 0.0; // the model's pass and its decoding, not the wait for the frame
    int detections = 0;
};

/**
 * A model running on the node's camera, as DeploymentHost drives it from its own thread: net
 * knows nothing of how frames are read or the model is run (deploy/ does, with OpenCV and
 * vision). Used from one thread at a time.
 */
class Inference
{
public:
    virtual ~Inference() = default;
    /** Waits for the camera's next frame and runs the model on it. False, with the reason in
     *  `error`, when the camera gives no more frames. Waits at most about a frame's time. */
    virtual bool step(InferenceFrame *frame, QString *error) = 0;
    /** The last frame step() ran on, its boxes drawn, as a JPEG at most 320 px wide (empty
     *  before the first). */
    virtual QByteArray snapshot() = 0;
};

} // namespace edgetrain::net
