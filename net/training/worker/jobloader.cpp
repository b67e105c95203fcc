#include "net/training/worker/jobloader.h"

#include "core/error.h"
#include "core/fashionmnist.h"
#include "net/training/trainingworker.h"

namespace edgetrain::net::worker {

namespace {

/** The job's train and test sets, shipped or read from the node's data directory. */
void loadData(const JobSpec &job, const WorkerContext &context, LoadedJob &loaded)
{
    if (job.dataset == QLatin1String("shipped")) {
        loaded.train = context.train;
        loaded.test = context.test;
        if (!loaded.train)
            throw core::Error("shipment '" + job.train_shipment.toStdString() +
                              "' has not arrived on this node");
        return;
    }
    const std::string dir =
        context.data_dir.empty() ? core::FashionMnist::kDefaultDirectory : context.data_dir;
    loaded.train = std::make_shared<core::TensorDataset>(
        core::FashionMnist::load(dir, core::FashionMnist::Split::Train, job.train_limit));
    loaded.test = std::make_shared<core::TensorDataset>(
        core::FashionMnist::load(dir, core::FashionMnist::Split::Test, job.test_limit));
}

} // namespace

LoadedJob JobLoader::load(const JobSpec &job, const WorkerContext &context)
{
    LoadedJob loaded;
    const core::ModelSpec spec = core::ModelSpec::fromJson(job.model, "the job's model");
    loaded.model = std::make_unique<core::Model>(spec, job.seed);
    // Before the optimizer and the flat state: they hold the parameters, which tiling keeps.
    loaded.model->setTiling(job.tiled_stages, job.tile_rows, job.tile_cols);
    core::SgdOptions sgd;
    sgd.momentum = job.momentum;
    sgd.weight_decay = job.weight_decay;
    sgd.nesterov = job.nesterov;
    loaded.optimizer = std::make_unique<core::Sgd>(*loaded.model, sgd);
    loaded.flat = std::make_unique<core::FlatState>(*loaded.model, loaded.optimizer.get());
    if (job.average_decay > 0)
        loaded.average.emplace(job.average_decay);
    loaded.schedule = core::LrSchedule::parse(job.schedule.toStdString());
    loadData(job, context, loaded);

    const core::TensorDataset &train = *loaded.train;
    const bool classifier = spec.loss().type == core::LossSpec::Type::SoftmaxCrossEntropy;
    if (train.sampleShape() != loaded.model->sampleShape() ||
        (classifier && train.classCount() > loaded.model->classCount()))
        throw core::ShapeError(train.description() + " does not fit model '" + spec.name() + "'");
    if (train.labelWidth() != spec.labelWidth())
        throw core::ShapeError(train.description() + " has labels of " +
                               std::to_string(train.labelWidth()) +
                               " values per sample but model '" + spec.name() + "' needs " +
                               std::to_string(spec.labelWidth()));
    return loaded;
}

} // namespace edgetrain::net::worker
