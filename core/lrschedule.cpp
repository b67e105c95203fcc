#include "lrschedule.h"

#include "error.h"
#include "numbertext.h"

#include <cmath>
#include <cstdio>
#include <numbers>

namespace edgetrain::core {

LrSchedule LrSchedule::parse(const std::string &text)
{
    LrSchedule s;
    if (text == "constant")
        return s;
    if (text == "cosine") {
        s.m_kind = Kind::Cosine;
        return s;
    }
    if (text.rfind("step:", 0) == 0) {
        const auto colon = text.find(':', 5);
        try {
            std::size_t used = 0;
            s.m_stepEpochs = std::stoi(text.substr(5, colon - 5), &used);
            if (colon != std::string::npos)
                s.m_gamma = NumberText::parse(text.substr(colon + 1)).value_or(0.0);
        } catch (const std::exception &) {
            s.m_stepEpochs = 0;
        }
        if (s.m_stepEpochs >= 1 && s.m_gamma > 0.0 && s.m_gamma <= 1.0) {
            s.m_kind = Kind::Step;
            return s;
        }
    }
    throw SpecError("learning-rate schedule '" + text +
                    "': expected constant, cosine or step:EPOCHS[:GAMMA] (e.g. step:2:0.1)");
}

double LrSchedule::rate(double base, std::int64_t step, std::int64_t totalSteps,
                        std::int64_t stepsPerEpoch) const
{
    switch (m_kind) {
    case Kind::Constant:
        return base;
    case Kind::Step: {
        const std::int64_t epoch = stepsPerEpoch > 0 ? step / stepsPerEpoch : 0;
        return base * std::pow(m_gamma, double(epoch / m_stepEpochs));
    }
    case Kind::Cosine:
        if (totalSteps <= 1)
            return base;
        return 0.5 * base * (1.0 + std::cos(std::numbers::pi * double(step) / double(totalSteps)));
    }
    return base;
}

std::string LrSchedule::toString() const
{
    switch (m_kind) {
    case Kind::Constant:
        return "constant";
    case Kind::Cosine:
        return "cosine";
    case Kind::Step: {
        return "step:" + std::to_string(m_stepEpochs) + ":" + NumberText::format(m_gamma);
    }
    }
    return "constant";
}

} // namespace edgetrain::core
