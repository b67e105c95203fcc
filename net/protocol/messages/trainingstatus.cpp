#include "net/protocol/messages/trainingstatus.h"

#include "net/protocol/cborfield.h"

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

QCborMap TrainingStatus::toCbor() const
{
    return QCborMap{{QStringLiteral("active"), active},
                    {QStringLiteral("job"), job},
                    {QStringLiteral("phase"), phaseName(phase)},
                    {QStringLiteral("epoch"), epoch},
                    {QStringLiteral("step"), qint64(step)},
                    {QStringLiteral("steps"), qint64(steps)},
                    {QStringLiteral("loss"), loss},
                    {QStringLiteral("accuracy"), accuracy},
                    {QStringLiteral("images_per_second"), images_per_second},
                    {QStringLiteral("rank"), rank},
                    {QStringLiteral("group_size"), group_size}};
}

TrainingStatus TrainingStatus::fromCbor(const QCborMap &m)
{
    TrainingStatus s;
    s.active = m.value(QStringLiteral("active")).toBool();
    s.job = m.value(QStringLiteral("job")).toString();
    s.phase = parsePhase(m.value(QStringLiteral("phase")).toString());
    s.epoch = int(cborInteger(m.value(QStringLiteral("epoch"))));
    s.step = cborInteger(m.value(QStringLiteral("step")));
    s.steps = cborInteger(m.value(QStringLiteral("steps")));
    s.loss = m.value(QStringLiteral("loss")).toDouble();
    s.accuracy = m.value(QStringLiteral("accuracy")).toDouble();
    s.images_per_second = m.value(QStringLiteral("images_per_second")).toDouble();
    s.rank = int(cborInteger(m.value(QStringLiteral("rank")), -1));
    s.group_size = int(cborInteger(m.value(QStringLiteral("group_size"))));
    return s;
}

} // namespace edgetrain::net
