#include "net/protocol/messages/trainingstatus.h"

namespace edgetrain::net {

namespace {
constexpr TrainingPhase kPhases[] = {TrainingPhase::Queued,      TrainingPhase::Loading,
                                     TrainingPhase::Calibrating, TrainingPhase::Training,
                                     TrainingPhase::Evaluating,  TrainingPhase::Regrouping,
                                     TrainingPhase::Done,        TrainingPhase::Stopped,
                                     TrainingPhase::Abandoned,   TrainingPhase::Failed};
} // namespace

QString phaseName(TrainingPhase phase)
{
    switch (phase) {
    case TrainingPhase::Idle:
        return QStringLiteral("idle");
    case TrainingPhase::Queued:
        return QStringLiteral("queued");
    case TrainingPhase::Loading:
        return QStringLiteral("loading");
    case TrainingPhase::Calibrating:
        return QStringLiteral("calibrating");
    case TrainingPhase::Training:
        return QStringLiteral("training");
    case TrainingPhase::Evaluating:
        return QStringLiteral("evaluating");
    case TrainingPhase::Regrouping:
        return QStringLiteral("regrouping");
    case TrainingPhase::Done:
        return QStringLiteral("done");
    case TrainingPhase::Stopped:
        return QStringLiteral("stopped");
    case TrainingPhase::Abandoned:
        return QStringLiteral("abandoned");
    case TrainingPhase::Failed:
        return QStringLiteral("failed");
    }
    return {};
}

TrainingPhase parsePhase(const QString &name)
{
    for (TrainingPhase p : kPhases)
        if (name == phaseName(p))
            return p;
    return TrainingPhase::Idle;
}

} // namespace edgetrain::net
