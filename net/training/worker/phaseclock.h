#pragma once

#include "net/protocol/messages/profilereport.h"

#include <QLatin1String>

#include <chrono>

namespace edgetrain::net::worker {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

/** Where a profile's time goes: each lap() adds the time since the last one (or since the clock
 *  was made) to the named phase of the profile. */
class PhaseClock
{
public:
    explicit PhaseClock(ProfileReport &profile) : m_profile(profile) {}

    void lap(const char *phase)
    {
        m_profile.addPhase(QLatin1String(phase), secondsSince(m_last));
        m_last = Clock::now();
    }

private:
    ProfileReport &m_profile;
    Clock::time_point m_last = Clock::now();
};

} // namespace edgetrain::net::worker
