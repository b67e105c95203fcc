#pragma once

#include <QCborMap>
#include <QString>

#include <cstdint>

namespace edgetrain::net {

/** Where a node's job is (TrainingStatus::phase). */
enum class TrainingPhase {
    None, // no job (or a status from before phases)
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
/** Its name in messages and logs ("training"); empty for None. */
QString phaseName(TrainingPhase phase);
/** The phase a name stands for; None for an unknown one. */
TrainingPhase parsePhase(const QString &name);

/** What a node is doing, as its metrics report it (read from any thread): the body of
 *  "progress" and the "training" part of a node's metrics. */
struct TrainingStatus
{
    bool active = false;
    QString job;
    QString phase; // "loading", "calibrating", "training", "evaluating", "regrouping", "done"
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
