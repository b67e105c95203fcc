#pragma once

#include "vision/framesource.h"

#include <chrono>
#include <memory>
#include <string>

namespace edgetrain::deploy {

/**
 * A node's camera as a deployed model reads it: a camera as it comes; a video file or an image
 * folder made to behave as one, looping at its own frame rate, so a frame read late is the one
 * a camera would show by then (the frames in between are skipped) and one read early waits for
 * its time. Not thread-safe.
 */
class PacedSource
{
public:
    /** Throws vision::SourceError naming `spec` when it cannot be opened. */
    explicit PacedSource(std::string spec);

    /** The frame of now; false with the reason when the camera gives no more (a file that
     *  cannot be read from its start again). */
    bool read(cv::Mat &frame, std::string *error);
    /** A camera ("camera:N", "/dev/videoN"): frames as they come, no pacing, no looping. */
    bool live() const { return m_live; }
    double fps() const { return m_fps; }

private:
    bool readNext(cv::Mat &frame, std::string *error);

    using Clock = std::chrono::steady_clock;
    std::string m_spec;
    std::unique_ptr<vision::FrameSource> m_source;
    bool m_live = false;
    double m_fps = 25.0;
    Clock::time_point m_start;
    std::int64_t m_next = 0; // frames read since m_start, loops included
};

} // namespace edgetrain::deploy
