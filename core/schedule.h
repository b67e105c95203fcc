#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * One step of a training-step program over a chain of L stages. x[i] is the input of stage i
 * (x[0] the batch, x[L] the logits); the gradient travels from x[L] back to x[0].
 */
struct ScheduleOp
{
    enum Kind : std::uint8_t {
        ForwardKeep,  // x[i+1] = stage i (x[i]), keeping nothing for backward
        ForwardCache, // the same, keeping stage i's activations for its backward
        Discard,      // forget x[i]
        Loss,         // cross-entropy of x[L]: the gradient at L; x[L] is forgotten
        Backward,     // gradient at i+1 -> gradient at i through stage i's cache (then freed)
    };
    Kind kind;
    int stage;
    bool operator==(const ScheduleOp &) const = default;
};

/**
 * What to keep and what to recompute in a training step: a program of ScheduleOps that
 * ChainExecutor runs. Every schedule computes exactly the same gradients; they differ in peak
 * memory and in how many stage forwards they evaluate.
 */
class Schedule
{
public:
    /** Keep every stage's activations (no recomputation). */
    static Schedule storeAll(int stages);
    /**
     * PyTorch's checkpoint_sequential(segments): the first segments - 1 segments of
     * floor(L / segments) stages keep only their input; the last segment runs normally; in
     * backward each checkpointed segment is recomputed from its input.
     */
    static Schedule sequential(int stages, int segments);
    /**
     * Binomial checkpointing (Griewank's Revolve) with `slots` checkpoints besides the chain's
     * input: the minimal number of stage forwards for uniform chains (see revolveForwards).
     */
    static Schedule revolve(int stages, int slots);
    /** Builds a schedule from explicit ops (validated by ChainExecutor when run). */
    static Schedule fromOps(std::string name, int stages, std::vector<ScheduleOp> ops);

    /**
     * "store-all", "sequential:K", "revolve:C" for a chain of `stages`; throws SpecError
     * otherwise ("optimal" needs a budget: see MemoryPlanner).
     */
    static Schedule parse(const std::string &text, int stages);

    /** Forward evaluations (keep + cache) the binomial schedule needs for l stages, c slots. */
    static std::int64_t revolveForwards(int stages, int slots);

    const std::string &name() const { return m_name; }
    int stageCount() const { return m_stages; }
    const std::vector<ScheduleOp> &ops() const { return m_ops; }
    /** Stage forward evaluations, and how often each stage is evaluated. */
    std::int64_t forwardCount() const;
    std::vector<int> forwardsPerStage() const;
    /** Human-readable program, e.g. "F0 F1* D1 L B1 B0". */
    std::string toString() const;

private:
    std::string m_name;
    int m_stages = 0;
    std::vector<ScheduleOp> m_ops;
};

} // namespace edgetrain::core
