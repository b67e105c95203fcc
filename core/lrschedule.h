#pragma once

#include <cstdint>
#include <string>

namespace edgetrain::core {

/**
 * Learning rate over training. Constant; Step (multiply by gamma every step_epochs epochs);
 * Cosine (from the base rate down to 0 over all steps, updated every step).
 * parse("step:10:0.1"), parse("cosine"), parse("constant"); throws SpecError otherwise.
 */
class LrSchedule
{
public:
    enum class Kind { Constant, Step, Cosine };

    LrSchedule() = default;
    static LrSchedule parse(const std::string &text);

    /** The rate for step `step` (0-based, counted over the whole run) of `totalSteps`. */
    double rate(double base, std::int64_t step, std::int64_t totalSteps,
                std::int64_t stepsPerEpoch) const;
    std::string toString() const;

private:
    Kind m_kind = Kind::Constant;
    int m_stepEpochs = 1;
    double m_gamma = 0.1;
};

} // namespace edgetrain::core
