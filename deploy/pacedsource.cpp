#include "deploy/pacedsource.h"

#include <thread>

namespace edgetrain::deploy {

namespace {

/** Frames a late read skips at most by reading them; past this the clock starts over. */
constexpr std::int64_t kMaxSkipped = 30;

} // namespace

PacedSource::PacedSource(std::string spec, double rate_fps)
    : m_spec(std::move(spec)), m_source(vision::FrameSource::open(m_spec))
{
    m_live = m_source->frameCount() < 0;
    m_unpaced = rate_fps == kUnpaced;
    if (rate_fps > 0 && !m_unpaced)
        m_fps = rate_fps;
    else if (m_source->fps() > 0 && m_source->fps() < 1000)
        m_fps = m_source->fps();
    m_start = Clock::now();
}

bool PacedSource::readNext(cv::Mat &frame, std::string *error)
{
    vision::Frame f;
    if (m_source->read(f)) {
        frame = f.image;
        ++m_next;
        return true;
    }
    if (m_live) {
        *error = m_spec + " gives no more frames";
        return false;
    }
    // The end of the file: from its start again (reopened if it cannot seek).
    if (!m_source->seek(0))
        m_source = vision::FrameSource::open(m_spec);
    if (!m_source->read(f)) {
        *error = m_spec + " cannot be read from its start again";
        return false;
    }
    frame = f.image;
    ++m_next;
    return true;
}

bool PacedSource::read(cv::Mat &frame, std::string *error)
{
    try {
        if (unpaced())
            return readNext(frame, error);
        const auto due = [&](std::int64_t index) {
            return m_start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(double(index) / m_fps));
        };
        // Late: the frames a camera would have shown meanwhile are gone.
        std::int64_t now =
            std::int64_t(std::chrono::duration<double>(Clock::now() - m_start).count() * m_fps);
        if (now - m_next > kMaxSkipped) {
            m_start = Clock::now() - (due(m_next) - m_start);
            now = m_next;
        }
        while (m_next < now)
            if (!readNext(frame, error))
                return false;
        std::this_thread::sleep_until(due(m_next));
        return readNext(frame, error);
    } catch (const std::exception &e) {
        *error = e.what();
        return false;
    }
}

} // namespace edgetrain::deploy
