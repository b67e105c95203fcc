#pragma once

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli detect`: one detector (hog, cascade:FILE, onnx:FILE, motion or a session's
 * trained student, session:DIR) over a source, on chosen frames (--frames 3,17,40 or --every K;
 * default every frame). A detector that must see every frame (motion) observes every frame up
 * to each requested one. Boxes in source pixels: --json (last line {"frames": [{"index", "boxes":
 * [{"x", "y", "w", "h", "score"}]}], "fps"}), --mot (MOT Challenge rows) and --video (the frames
 * with the boxes drawn).
 */
class DetectCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
