#pragma once

#include "dataset.h"
#include "lrschedule.h"
#include "memoryaccountant.h"
#include "model.h"
#include "random.h"
#include "sgd.h"

#include <atomic>
#include <functional>
#include <optional>
#include <vector>

namespace edgetrain::core {

class WeightAverage;

struct TrainOptions
{
    int epochs = 1;
    std::int64_t batch = 64;
    double lr = 0.05;
    SgdOptions sgd;
    LrSchedule schedule;
    /** Which activations a step keeps and which it recomputes (default: keep all). */
    std::optional<Schedule> checkpointing;
    std::uint64_t seed = 0; // shuffling and dropout (the weights have their own seed)
    std::int64_t eval_batch = 500;
    /** When set: updated after every optimizer step, and the epochs' test figures are those of
     *  the averaged weights (the model keeps training its own). The caller owns it, so one
     *  average can span several runs (a warmup, then the main schedule). */
    WeightAverage *average = nullptr;
};

struct BatchProgress
{
    int epoch = 0;            // 1-based
    std::int64_t batch = 0;   // 1-based within the epoch
    std::int64_t batches = 0; // per epoch
    double loss = 0.0;        // of this batch
    double lr = 0.0;
};

struct EpochStats
{
    int epoch = 0;
    double train_loss = 0.0;     // mean over the epoch's samples
    double train_accuracy = 0.0; // while training (the weights moved during the epoch); for a
                                 // detector the recall of object centres (see Loss)
    double test_loss = 0.0;
    double test_accuracy = -1.0; // -1 when there is no test set
    double train_seconds = 0.0;  // training only (batch assembly included, evaluation not)
    double images_per_second = 0.0;
    double lr = 0.0; // at the end of the epoch
};

struct EvalResult
{
    double loss = 0.0;
    double accuracy = 0.0;
    std::int64_t count = 0;
};

struct TrainResult
{
    std::vector<EpochStats> epochs;
    bool cancelled = false;
    std::int64_t images = 0; // samples trained on
    double train_seconds = 0.0;
    MemorySnapshot memory; // peaks over the whole run
};

/**
 * The order samples are visited in: a fresh shuffle per epoch (seeded), cut into mini-batches
 * of `batch` (the last one partial; a trailing batch of a single sample is folded into the one
 * before, since it could not be batch-normalised). Local and distributed training share it, so
 * n nodes splitting each batch see exactly the samples one node would.
 */
class BatchOrder
{
public:
    BatchOrder(std::int64_t samples, std::int64_t batch, std::uint64_t seed);
    /** Shuffles for the next epoch (call once before the first). */
    void nextEpoch();
    std::int64_t batches() const { return m_batches; }
    std::int64_t first(std::int64_t b) const { return b * m_batch; }
    std::int64_t count(std::int64_t b) const
    {
        return b + 1 == m_batches ? std::int64_t(m_order.size()) - b * m_batch : m_batch;
    }
    const std::int64_t *indices(std::int64_t b) const { return m_order.data() + first(b); }

private:
    std::int64_t m_batch;
    std::int64_t m_batches;
    std::vector<std::int64_t> m_order;
    Rng m_shuffler;
};

/**
 * The training loop: shuffled mini-batches (the last partial batch kept), SGD, per-epoch
 * evaluation. Reports through plain callbacks (called on the calling thread) and stops after
 * the current batch when *stop becomes true. Deterministic for a given seed and thread count.
 */
class Trainer
{
public:
    struct Callbacks
    {
        std::function<void(const BatchProgress &)> onBatch;
        std::function<void(const EpochStats &)> onEpoch;
        /** Asked after each epoch (after onEpoch): true ends the run there, finished, not
         *  cancelled (early stopping). */
        std::function<bool(const EpochStats &)> finishAfter;
    };

    /** Throws SpecError for absurd options, ShapeError if the data does not fit the model
     *  (sample shape, or a label width other than the model's loss needs). */
    static TrainResult run(Model &model, const Dataset &train, const Dataset *test,
                           const TrainOptions &options, const Callbacks &callbacks,
                           const std::atomic<bool> *stop = nullptr);

    static EvalResult evaluate(Model &model, const Dataset &data, std::int64_t batch,
                               const std::atomic<bool> *stop = nullptr);
};

} // namespace edgetrain::core
