#pragma once

#include "vision/framesource.h"

#include <chrono>
#include <limits>
#include <memory>
#include <string>

namespace edgetrain::deploy {

/**
 * A node's camera as a deployed model reads it: a camera as it comes; a video file or an image
 * folder made to behave as one, looping at its own frame rate (or the rate the node is given),
 * so a frame read late is the one a camera would show by then (the frames in between are
 * skipped) and one read early waits for its time. Unpaced, a file or folder loops as fast as it
 * is read, every frame in turn: what a benchmark of the model on the node needs. Not
 * thread-safe.
 */
class PacedSource
{
public:
    /** `rate_fps` for a file or folder's own frame rate. */
    static constexpr double kOwnRate = 0.0;
    /** `rate_fps` for no pacing: each read gives the next frame at once. */
    static constexpr double kUnpaced = std::numeric_limits<double>::infinity();

    /** `rate_fps`: the frames/s a file or folder is paced at (kOwnRate, kUnpaced or a rate
     *  above 0); a camera ignores it. Throws vision::SourceError naming `spec` when it cannot
     *  be opened. */
    explicit PacedSource(std::string spec, double rate_fps = kOwnRate);

    /** The frame of now; false with the reason when the camera gives no more (a file that
     *  cannot be read from its start again). */
    bool read(cv::Mat &frame, std::string *error);
    /** A camera ("camera:N", "/dev/videoN"): frames as they come, no pacing, no looping. */
    bool live() const { return m_live; }
    /** Read as fast as it can be: a camera, or a file or folder given kUnpaced. */
    bool unpaced() const { return m_live || m_unpaced; }
    /** The rate a paced file or folder is read at (frames/s). */
    double fps() const { return m_fps; }

private:
    bool readNext(cv::Mat &frame, std::string *error);

    using Clock = std::chrono::steady_clock;
    std::string m_spec;
    std::unique_ptr<vision::FrameSource> m_source;
    bool m_live = false;
    bool m_unpaced = false;
    double m_fps = 25.0;
    Clock::time_point m_start;
    std::int64_t m_next = 0; // frames read since m_start, loops included
};

} // namespace edgetrain::deploy
