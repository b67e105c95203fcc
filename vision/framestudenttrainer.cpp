#include "framestudenttrainer.h"

#include "core/error.h"
#include "core/weightaverage.h"
#include "core/zoo.h"
#include "studentteacher.h"

#include <chrono>
#include <limits>
#include <memory>
#include <optional>

namespace edgetrain::vision {

core::ModelSpec FrameStudentTrainer::spec(cv::Size input)
{
    return core::Zoo::spec("detector").withInputShape(core::Shape{3, input.height, input.width});
}

core::TrainResult FrameStudentTrainer::train(core::Model &model, const std::string &sessionDir,
                                             const FrameTrainOptions &o,
                                             const core::Trainer::Callbacks &callbacks,
                                             const std::atomic<bool> *stop)
{
    const core::TensorDataset train = FrameDataset::load(sessionDir, Split::Train, o.max_objects);
    std::unique_ptr<core::TensorDataset> validation;
    try {
        validation = std::make_unique<core::TensorDataset>(
            FrameDataset::load(sessionDir, Split::Validation, o.max_objects));
    } catch (const core::FormatError &) {
        // a short video has no validation block: train without
    }
    core::TrainOptions t;
    t.batch = o.batch;
    t.sgd.momentum = 0.9;
    t.sgd.weight_decay = o.weight_decay;
    t.seed = o.seed;
    t.eval_batch = 16;
    std::optional<core::WeightAverage> average;
    if (o.average_decay > 0)
        t.average = &average.emplace(o.average_decay);
    core::TrainResult all;
    int done = 0;
    // keep_best: a copy of the parameters and buffers of the best validation epoch so far.
    std::vector<core::Tensor> best;
    double bestLoss = std::numeric_limits<double>::infinity();
    auto snapshot = [&] {
        if (average)
            average->swap(model);
        best.clear();
        for (const core::NamedParameter &p : model.parameters())
            best.push_back(p.parameter->value.clone(core::MemoryCategory::Weights));
        for (const core::NamedBuffer &b : model.buffers())
            if (b.buffer.tensor)
                best.push_back(b.buffer.tensor->clone(core::MemoryCategory::Weights));
        if (average)
            average->swap(model);
    };
    int bestEpoch = 0;
    bool ended = false; // patience ran out
    auto phase = [&](int epochs, double lr, const char *schedule) {
        if (epochs <= 0 || all.cancelled || ended)
            return;
        t.epochs = epochs;
        t.lr = lr;
        t.schedule = core::LrSchedule::parse(schedule);
        t.seed = o.seed + std::uint64_t(done);
        core::Trainer::Callbacks c = callbacks;
        c.onEpoch = [&](const core::EpochStats &e) {
            core::EpochStats shifted = e;
            shifted.epoch += done;
            if (o.keep_best && validation && e.test_loss < bestLoss) {
                bestLoss = e.test_loss;
                bestEpoch = shifted.epoch;
                snapshot();
            }
            if (callbacks.onEpoch)
                callbacks.onEpoch(shifted);
        };
        c.finishAfter = [&](const core::EpochStats &e) {
            ended = o.keep_best && validation && o.patience > 0 && bestEpoch > 0 &&
                    e.epoch + done - bestEpoch >= o.patience;
            return ended;
        };
        c.onBatch = [&](const core::BatchProgress &b) {
            core::BatchProgress shifted = b;
            shifted.epoch += done;
            if (callbacks.onBatch)
                callbacks.onBatch(shifted);
        };
        core::TrainResult r = core::Trainer::run(model, train, validation.get(), t, c, stop);
        for (core::EpochStats e : r.epochs) {
            e.epoch += done;
            all.epochs.push_back(e);
        }
        all.cancelled = r.cancelled;
        all.images += r.images;
        all.train_seconds += r.train_seconds;
        all.memory = r.memory;
        done += epochs;
    };
    const int warmup = std::min(o.warmup_epochs, o.epochs - 1);
    phase(warmup, o.lr / 10, "constant");
    phase(o.epochs - std::max(0, warmup), o.lr, "cosine");
    if (!best.empty() && !all.cancelled) {
        std::size_t i = 0;
        for (const core::NamedParameter &p : model.parameters())
            p.parameter->value.copyFrom(best[i++]);
        for (const core::NamedBuffer &b : model.buffers())
            if (b.buffer.tensor)
                b.buffer.tensor->copyFrom(best[i++]);
    } else if (average && !all.cancelled) {
        average->copyTo(model);
    }
    return all;
}

int FrameStudentTrainer::bestEpoch(const core::TrainResult &result)
{
    int best = 0;
    double loss = std::numeric_limits<double>::infinity();
    for (const core::EpochStats &e : result.epochs)
        if (e.test_accuracy >= 0 && e.test_loss < loss) {
            loss = e.test_loss;
            best = e.epoch;
        }
    return best;
}

SelfTrainStats FrameStudentTrainer::relabel(LabelResult &labels, FrameSource &source,
                                            core::Model &student, const SelfTrainOptions &o,
                                            const Labeler::Progress &progress,
                                            const std::atomic<bool> *stop)
{
    const auto start = std::chrono::steady_clock::now();
    // The Labeler's teacher owns a model handle; the student here is borrowed.
    StudentTeacher teacher(std::shared_ptr<core::Model>(&student, [](core::Model *) {}));
    teacher.threshold = o.threshold;
    if (!source.seek(0))
        throw SourceError("cannot seek to the start of '" + source.description() + "'");
    const LabelResult found = Labeler::run(source, teacher, o.label, progress, stop);
    SelfTrainStats stats;
    int nextId = 0;
    for (const Track &t : labels.tracks)
        nextId = std::max(nextId, t.id + 1);
    auto isNew = [&](const TrackBox &b) {
        for (const Track &t : labels.tracks) {
            const TrackBox *old = t.at(b.frame);
            if (old && iou(old->box, b.box) >= o.overlap_iou)
                return false;
        }
        return true;
    };
    std::vector<Track> added;
    for (const Track &t : found.tracks) {
        if (t.state != Track::State::Accepted)
            continue;
        ++stats.tracks;
        Track n;
        n.id = nextId + int(added.size());
        n.note = "self-training";
        for (TrackBox b : t.boxes) {
            if (!isNew(b))
                continue;
            if (b.source == BoxSource::Teacher)
                b.source = BoxSource::Student;
            n.boxes.push_back(b);
        }
        const int students =
            int(std::count_if(n.boxes.begin(), n.boxes.end(),
                              [](const TrackBox &b) { return b.source == BoxSource::Student; }));
        if (students == 0)
            continue;
        stats.student_boxes += students;
        stats.tracker_boxes += int(n.boxes.size()) - students;
        added.push_back(std::move(n));
    }
    stats.new_tracks = int(added.size());
    for (Track &t : added)
        labels.tracks.push_back(std::move(t));
    labels.updateStats();
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats;
}

} // namespace edgetrain::vision
