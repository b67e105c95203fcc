#pragma once

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli pick --session DIR [--count N] [--by spread|disagreement] [--write]`: the frames
 * a person should verify next. spread: the even, unbiased pick (pickFrames). disagreement: the
 * session's student, teacher, motion (a video file) and tracker run over candidate frames
 * (Disagreement::candidates) and the frames where they disagree most, spread over time, are
 * picked; needs a trained student. Both keep every frame truth.json holds. Prints the frames
 * (with the disagreement's parts); --write adds the new ones to truth.json (not done, their pick
 * recorded). Exit status 2 for usage errors, 1 for a session it cannot read or run.
 */
class PickCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
