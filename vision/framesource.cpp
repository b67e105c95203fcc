#include "framesource.h"

#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <filesystem>

namespace edgetrain::vision {

namespace {

class VideoSource : public FrameSource
{
public:
    VideoSource(const std::string &spec, int camera) : m_spec(spec), m_camera(camera >= 0)
    {
        const bool opened = camera >= 0 ? m_capture.open(camera, cv::CAP_V4L2) : openFile(spec);
        if (!opened || !m_capture.isOpened())
            throw SourceError(
                camera >= 0 ? "cannot open camera " + std::to_string(camera) + " (V4L2)"
                            : "cannot open video '" + spec + "': not a file OpenCV can decode");
        // A file that opens but yields no frame is as unreadable as one that does not open.
        cv::Mat probe;
        if (!m_capture.read(probe) || probe.empty())
            throw SourceError("'" + spec + "' has no readable frame");
        m_size = probe.size();
        m_pending = probe;
        m_fps = m_capture.get(cv::CAP_PROP_FPS);
        if (!(m_fps > 0 && m_fps < 1000))
            m_fps = 25.0;
        m_count = m_camera ? -1 : int(m_capture.get(cv::CAP_PROP_FRAME_COUNT));
    }
    std::string description() const override { return m_camera ? "camera " + m_spec : m_spec; }

    /** FFmpeg first; the other backends (GStreamer, image sequences) only if it cannot, with
     *  OpenCV's log quiet: it prints the assertions it catches while probing them, which read
     *  like a crash next to our own message. */
    bool openFile(const std::string &spec)
    {
        if (m_capture.open(spec, cv::CAP_FFMPEG) && m_capture.isOpened())
            return true;
        const auto level = cv::utils::logging::getLogLevel();
        cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
        const bool opened = m_capture.open(spec, cv::CAP_ANY);
        cv::utils::logging::setLogLevel(level);
        return opened;
    }
    bool read(Frame &frame) override
    {
        cv::Mat image;
        if (!m_pending.empty()) {
            image = m_pending;
            m_pending.release();
        } else if (!m_capture.read(image) || image.empty()) {
            return false;
        }
        frame.image = image;
        frame.index = m_next++;
        frame.timestamp_ms = 1000.0 * frame.index / m_fps;
        return true;
    }
    bool seek(int index) override
    {
        if (m_camera || index < 0 || (m_count >= 0 && index >= m_count))
            return false;
        m_pending.release();
        if (!m_capture.set(cv::CAP_PROP_POS_FRAMES, index))
            return false;
        m_next = index;
        return true;
    }
    int frameCount() const override { return m_count; }
    double fps() const override { return m_fps; }

private:
    std::string m_spec;
    bool m_camera;
    cv::VideoCapture m_capture;
    cv::Mat m_pending;
    double m_fps = 25.0;
    int m_count = -1;
    int m_next = 0;
};

class FolderSource : public FrameSource
{
public:
    explicit FolderSource(const std::string &dir) : m_dir(dir)
    {
        for (const auto &entry : std::filesystem::directory_iterator(dir)) {
            std::string ext = entry.path().extension().string();
            std::transform(ext.begin(), ext.end(), ext.begin(),
                           [](unsigned char c) { return char(std::tolower(c)); });
            if (entry.is_regular_file() &&
                (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp"))
                m_files.push_back(entry.path().string());
        }
        std::sort(m_files.begin(), m_files.end());
        if (m_files.empty())
            throw SourceError("folder '" + dir + "' has no .png, .jpg or .bmp images");
        const cv::Mat first = cv::imread(m_files.front());
        if (first.empty())
            throw SourceError("cannot read image '" + m_files.front() + "'");
        m_size = first.size();
    }
    std::string description() const override { return m_dir; }
    bool read(Frame &frame) override
    {
        while (m_next < int(m_files.size())) {
            const int index = m_next++;
            cv::Mat image = cv::imread(m_files[std::size_t(index)]);
            if (image.empty())
                throw SourceError("cannot read image '" + m_files[std::size_t(index)] + "'");
            if (image.size() != m_size)
                throw SourceError("image '" + m_files[std::size_t(index)] + "' is " +
                                  std::to_string(image.cols) + "x" + std::to_string(image.rows) +
                                  ", the folder's first is " + std::to_string(m_size.width) + "x" +
                                  std::to_string(m_size.height));
            frame.image = image;
            frame.index = index;
            frame.timestamp_ms = 1000.0 * index / fps();
            return true;
        }
        return false;
    }
    bool seek(int index) override
    {
        if (index < 0 || index >= int(m_files.size()))
            return false;
        m_next = index;
        return true;
    }
    int frameCount() const override { return int(m_files.size()); }
    double fps() const override { return 25.0; }

private:
    std::string m_dir;
    std::vector<std::string> m_files;
    int m_next = 0;
};

} // namespace

std::unique_ptr<FrameSource> FrameSource::open(const std::string &spec)
{
    if (spec.rfind("camera:", 0) == 0) {
        const std::string n = spec.substr(7);
        if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos)
            throw SourceError("camera source must be camera:N, got '" + spec + "'");
        return std::make_unique<VideoSource>(spec, std::stoi(n));
    }
    if (spec.rfind("/dev/video", 0) == 0) {
        const std::string n = spec.substr(10);
        if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos)
            throw SourceError("'" + spec + "' is not a V4L2 device like /dev/video0");
        return std::make_unique<VideoSource>(spec, std::stoi(n));
    }
    std::error_code ec;
    if (std::filesystem::is_directory(spec, ec))
        return std::make_unique<FolderSource>(spec);
    if (!std::filesystem::exists(spec, ec))
        throw SourceError("source '" + spec + "' does not exist");
    return std::make_unique<VideoSource>(spec, -1);
}

} // namespace edgetrain::vision
