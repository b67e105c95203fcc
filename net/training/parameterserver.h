#pragma once

#include "core/model.h"
#include "core/sgd.h"
#include "core/weightaverage.h"
#include "net/protocol/messages/workermessages.h"

#include <QByteArray>
#include <QCborMap>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace edgetrain::core {
class FlatState;
}

namespace edgetrain::net {

/** A gradient push as the parameter server takes it (GradientPush: bfloat16 gradients and
 *  float32 buffers, or float32 both). Fills `out` with gradientFloats + bufferFloats values;
 *  false if the push does not hold exactly that many. */
bool readPush(const GradientPush &push, std::size_t gradientFloats, std::size_t bufferFloats,
              std::vector<float> &out);
/** readPush() of a "ps_push" body; false also if the body is not a GradientPush. */
bool readPush(const QCborMap &body, std::size_t gradientFloats, std::size_t bufferFloats,
              std::vector<float> &out);

/**
 * The async mode's parameter server, hosted by the coordinator: the canonical weights and the
 * optimizer. Workers pull the weights, push gradients computed on them, and get fresh weights
 * back. Two guards keep stale gradients from wrecking the model (the failure the Raspberry Pi
 * paper saw with 5-10 asynchronous workers):
 *
 *  - bounded staleness (stale synchronous parallel): a worker whose push count runs more than
 *    `staleness` ahead of the slowest running worker is held (mayProceed() is false) until the
 *    slowest catches up;
 *  - each push is a step at the job's rate times the push's share of the global batch, with the
 *    job's momentum per push (asynchrony adds momentum of its own: a momentum spread over a
 *    round collapsed runs), divided by the push's staleness tau (the pushes applied since its
 *    worker pulled): a gradient of weights tau versions old moves them 1/tau as far.
 */
class ParameterServer
{
public:
    /** `averageDecay` in (0, 1) keeps a moving average of the weights (core::WeightAverage),
     *  folded in once per global batch of pushed samples, so the decay means what it means in
     *  sync training; 0: none. */
    ParameterServer(const core::ModelSpec &spec, std::uint64_t seed, const core::SgdOptions &sgd,
                    int staleness, std::int64_t globalBatch, double averageDecay = 0.0);
    ~ParameterServer();

    std::uint64_t version() const { return m_version; }
    /** Values and float buffers (FlatState's averaged layout). */
    std::vector<float> weights() const;
    /** What a run's result is: the moving average of the weights when there is one (and it has
     *  begun), else weights(). Evaluation, the best epoch and the final weights use it. */
    std::vector<float> resultWeights();
    std::size_t pushSize() const; // gradient floats + buffer floats
    std::size_t gradientSize() const;
    /** The full weights (weights()) for worker `id`, whose mirror becomes them: what it holds. */
    std::vector<float> pull(int id);
    /** The bfloat16 delta from worker `id`'s mirror to the weights now (CompressedExchange);
     *  the mirror adds it as the worker will. Empty if the worker has no mirror (never pulled):
     *  send it the full weights. */
    QByteArray delta(int id);
    /** CompressedExchange::fingerprint() of worker `id`'s mirror; empty if it has none. */
    QString mirrorFingerprint(int id) const;

    /** Pushes asking for a rate above this are malformed (the job's peak rate: no schedule
     *  goes above it); none by default. */
    void setMaxRate(double rate) { m_maxRate = rate; }

    void addWorker(int id);
    void removeWorker(int id);
    /** A worker at the epoch barrier no longer holds the others back. */
    void setRunning(int id, bool running);
    /** A new epoch: every worker starts counting from zero again. */
    void resetClocks();

    struct Push
    {
        bool applied = false;
        int staleness = 0;
        double lr = 0.0;
    };
    /** Applies one worker's gradient (and its batch-norm buffers) computed on `basedOn`. Not
     *  applied (a malformed push): an unknown worker, the wrong size, a version from the future,
     *  a rate that is not a finite number in [0, setMaxRate()], a sample count outside 1..global
     * batch + 1, or a value that is not finite (a node that diverged or is broken would make every
     * weight NaN for everyone). */
    Push push(int id, std::uint64_t basedOn, const float *data, std::size_t count, double lr,
              std::int64_t samples);
    /** False while the worker is more than `staleness` pushes ahead of the slowest running one. */
    bool mayProceed(int id) const;

    int maxStaleness() const { return m_maxStaleness; }
    std::int64_t pushes() const { return m_pushes; }
    std::int64_t held() const { return m_held; }
    void countHeld() { ++m_held; }

private:
    struct Worker
    {
        std::int64_t clock = 0;
        bool running = true;
        std::vector<float> mirror; // the weights this worker holds (after pull(), delta())
    };
    std::unique_ptr<core::Model> m_model;
    std::unique_ptr<core::Sgd> m_optimizer;
    std::unique_ptr<core::FlatState> m_flat;
    std::optional<core::WeightAverage> m_average;
    std::int64_t m_samplesSinceAverage = 0;
    double m_maxRate = std::numeric_limits<double>::infinity();
    int m_staleness;
    std::int64_t m_globalBatch;
    double m_momentum; // the job's, for one synchronous step
    std::uint64_t m_version = 0;
    std::map<int, Worker> m_workers;
    std::vector<float> m_gradient;
    int m_maxStaleness = 0;
    std::int64_t m_pushes = 0, m_held = 0;
};

} // namespace edgetrain::net
