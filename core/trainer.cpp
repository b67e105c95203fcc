#include "trainer.h"

#include "error.h"
#include "loss.h"
#include "numbertext.h"
#include "random.h"
#include "weightaverage.h"

#include <chrono>
#include <numeric>

namespace edgetrain::core {

namespace {

using Clock = std::chrono::steady_clock;

bool stopped(const std::atomic<bool> *stop)
{
    return stop && stop->load(std::memory_order_relaxed);
}

void checkData(const Model &model, const Dataset &data)
{
    if (data.sampleShape() != model.sampleShape())
        throw ShapeError(data.description() + " has samples of shape " +
                         data.sampleShape().toString() + " but model '" + model.spec().name() +
                         "' takes " + model.sampleShape().toString());
    if (data.labelWidth() != model.spec().labelWidth())
        throw ShapeError(
            data.description() + " has labels of " + std::to_string(data.labelWidth()) +
            " values per sample but model '" + model.spec().name() + "' (loss " +
            (model.spec().loss().type == LossSpec::Type::CenterNet ? "centernet"
                                                                   : "softmax_cross_entropy") +
            ") needs " + std::to_string(model.spec().labelWidth()));
    if (model.spec().loss().type == LossSpec::Type::SoftmaxCrossEntropy &&
        data.classCount() > model.classCount())
        throw ShapeError(data.description() + " has " + std::to_string(data.classCount()) +
                         " classes but model '" + model.spec().name() + "' predicts " +
                         std::to_string(model.classCount()));
}

} // namespace

BatchOrder::BatchOrder(std::int64_t samples, std::int64_t batch, std::uint64_t seed)
    : m_batch(batch), m_batches((samples + batch - 1) / batch),
      m_order(static_cast<std::size_t>(samples)), m_shuffler(seed ^ 0x5348554646ull)
{
    if (m_batches > 1 && batch > 1 && samples % batch == 1)
        --m_batches;
}

void BatchOrder::nextEpoch()
{
    std::iota(m_order.begin(), m_order.end(), 0);
    for (std::int64_t i = std::int64_t(m_order.size()) - 1; i > 0; --i)
        std::swap(m_order[std::size_t(i)],
                  m_order[std::size_t(m_shuffler.below(std::uint64_t(i + 1)))]);
}

TrainResult Trainer::run(Model &model, const Dataset &train, const Dataset *test,
                         const TrainOptions &options, const Callbacks &callbacks,
                         const std::atomic<bool> *stop)
{
    if (options.epochs < 1 || options.epochs > 100000)
        throw SpecError("epochs must be between 1 and 100000, got " +
                        std::to_string(options.epochs));
    if (options.batch < 1 || options.batch > 65536)
        throw SpecError("batch size must be between 1 and 65536, got " +
                        std::to_string(options.batch));
    if (!(options.lr > 0.0 && options.lr < 100.0))
        throw SpecError("learning rate must be in (0, 100), got " + NumberText::format(options.lr));
    if (train.size() < 1)
        throw SpecError(train.description() + " is empty");
    checkData(model, train);
    if (test)
        checkData(model, *test);

    Sgd optimizer(model, options.sgd);
    BatchOrder order(train.size(), options.batch, options.seed);
    const std::int64_t batches = order.batches();
    const std::int64_t totalSteps = batches * options.epochs;
    const auto labelWidth = std::size_t(model.spec().labelWidth());
    std::vector<std::int32_t> labels(static_cast<std::size_t>(options.batch + 1) * labelWidth);

    TrainResult result;
    std::int64_t step = 0;
    for (int epoch = 1; epoch <= options.epochs && !result.cancelled; ++epoch) {
        order.nextEpoch();
        EpochStats stats;
        stats.epoch = epoch;
        double lossSum = 0.0;
        std::int64_t correct = 0, targets = 0, seen = 0;
        const auto start = Clock::now();
        for (std::int64_t b = 0; b < batches; ++b) {
            if (stopped(stop)) {
                result.cancelled = true;
                break;
            }
            const std::int64_t count = order.count(b);
            Tensor x(model.batchShape(count), MemoryCategory::Activations);
            train.gather(order.indices(b), count, x.data(), labels.data());
            const double lr = options.schedule.rate(options.lr, step, totalSteps, batches);
            PassContext ctx;
            ctx.training = true;
            ctx.seed = options.seed;
            ctx.step = std::uint64_t(step);
            const StepResult r = model.forwardBackward(
                x, labels.data(), ctx, options.checkpointing ? &*options.checkpointing : nullptr);
            x = Tensor();
            optimizer.step(lr);
            if (options.average)
                options.average->update(model);
            ++step;
            lossSum += r.loss * double(count);
            correct += r.correct;
            targets += r.count;
            seen += count;
            stats.lr = lr;
            if (callbacks.onBatch)
                callbacks.onBatch({epoch, b + 1, batches, r.loss, lr});
        }
        stats.train_seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (seen == 0)
            break;
        stats.train_loss = lossSum / double(seen);
        stats.train_accuracy = double(correct) / double(std::max<std::int64_t>(targets, 1));
        stats.images_per_second = double(seen) / std::max(stats.train_seconds, 1e-9);
        result.images += seen;
        result.train_seconds += stats.train_seconds;
        if (test && !result.cancelled) {
            if (options.average)
                options.average->swap(model);
            const EvalResult ev = evaluate(model, *test, options.eval_batch, stop);
            if (options.average)
                options.average->swap(model);
            stats.test_loss = ev.loss;
            stats.test_accuracy = ev.accuracy;
        }
        result.epochs.push_back(stats);
        if (callbacks.onEpoch)
            callbacks.onEpoch(stats);
        if (callbacks.finishAfter && !result.cancelled && callbacks.finishAfter(stats))
            break;
    }
    result.memory = MemoryAccountant::global().snapshot();
    return result;
}

EvalResult Trainer::evaluate(Model &model, const Dataset &data, std::int64_t batch,
                             const std::atomic<bool> *stop)
{
    checkData(model, data);
    if (batch < 1)
        throw SpecError("evaluation batch size must be positive");
    EvalResult result;
    std::vector<std::int64_t> index(static_cast<std::size_t>(batch));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch) *
                                     std::size_t(model.spec().labelWidth()));
    double lossSum = 0.0;
    std::int64_t correct = 0, targets = 0;
    PassContext ctx;
    ctx.training = false;
    for (std::int64_t first = 0; first < data.size(); first += batch) {
        if (stopped(stop))
            break;
        const std::int64_t count = std::min(batch, data.size() - first);
        std::iota(index.begin(), index.begin() + count, first);
        Tensor x(model.batchShape(count), MemoryCategory::Activations);
        data.gather(index.data(), count, x.data(), labels.data());
        const Tensor logits = model.forward(x, ctx);
        const auto r = Loss::compute(model.spec().loss(), logits, labels.data(), nullptr);
        lossSum += r.loss * double(count);
        correct += r.correct;
        targets += r.count;
        result.count += count;
    }
    if (result.count > 0) {
        result.loss = lossSum / double(result.count);
        result.accuracy = double(correct) / double(std::max<std::int64_t>(targets, 1));
    }
    return result;
}

} // namespace edgetrain::core
