#pragma once

#include <QCborMap>
#include <QString>

#include <cstdint>

namespace edgetrain::net {

/** Where a node's job is (TrainingStatus::phase). */
enum class TrainingPhase {
    Idle, // no job
    Queued,
    Loading,
    Calibrating, // profiling the job on the device
    Training,
    Evaluating,
    Regrouping,
    Done,
    Stopped,
    Abandoned, // the coordinator's session closed
    Failed,
};
/** Its name in messages, logs and the session's records ("training", "idle"). */
QString phaseName(TrainingPhase phase);
/** The phase a name stands for; Idle for an unknown one (or none). */
TrainingPhase parsePhase(const QString &name);

/** What a node is doing, as its metrics report it (read from any thread): the body of
 *  "progress" and the "training" part of a node's metrics. */
struct TrainingStatus
{
    bool active = false;
    QString job;
    TrainingPhase phase = TrainingPhase::Idle;
    int epoch = 0;
    std::int64_t step = 0;
    std::int64_t steps = 0;
    double loss = 0.0;
    double accuracy = 0.0;
    double images_per_second = 0.0; // this node's compute speed over the last steps
    int rank = -1;
    int group_size = 0;

    QCborMap toCbor() const;
    static TrainingStatus fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net
