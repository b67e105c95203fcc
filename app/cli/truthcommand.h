#pragma once

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli truth import|export`: verified frames in and out of a session.
 *  import --session DIR --format mot|coco|cvat|yolo --file PATH [--source S] [--category C]:
 *    reads the file against the session's source (frame size and count, from labels.json's
 *    source or --source), merges it into DIR/truth.json replacing the frames it holds.
 *  export --session DIR --format F --out PATH [--what truth|labels]: the verified (done) frames,
 *    or the session's accepted tracks, in a format.
 * Exit status 2 for usage errors (unknown action, format or option), 1 for a bad file (the
 * message names file, line or element, and field; truth.json is left as it was).
 */
class TruthCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
