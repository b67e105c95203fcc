#pragma once

#include "core/error.h"

#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::vision {

/** A video, camera or image folder that cannot be opened or read. */
class SourceError : public core::IoError
{
public:
    using core::IoError::IoError;
};

/** One frame with where it came from: its index in the source and its time. */
struct Frame
{
    cv::Mat image; // BGR, 8-bit
    int index = 0;
    double timestamp_ms = 0.0;
};

/**
 * Frames from a video file, a camera (V4L2: "camera:0" or "/dev/video0") or a folder of images
 * (sorted by name). Throws SourceError naming the source when it cannot be opened.
 */
class FrameSource
{
public:
    static std::unique_ptr<FrameSource> open(const std::string &spec);
    virtual ~FrameSource() = default;

    virtual std::string description() const = 0;
    /** The next frame; false at the end. */
    virtual bool read(Frame &frame) = 0;
    /** Seeks so the next read() returns frame `index`; false if the source cannot. */
    virtual bool seek(int index) = 0;
    /** Frames in the source (-1: unknown, e.g. a camera). */
    virtual int frameCount() const = 0;
    virtual double fps() const = 0;
    cv::Size frameSize() const { return m_size; }

protected:
    cv::Size m_size;
};

} // namespace edgetrain::vision
