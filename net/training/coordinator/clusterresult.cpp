// The run's report and result types of trainingcoordinator.h: event names, saving the weights.
#include "core/error.h"
#include "core/flatstate.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "net/training/trainingcoordinator.h"

namespace edgetrain::net {

QString eventKindName(ClusterEventKind kind)
{
    switch (kind) {
    case ClusterEventKind::Lost:
        return QStringLiteral("lost");
    case ClusterEventKind::Failed:
        return QStringLiteral("failed");
    case ClusterEventKind::Rejoined:
        return QStringLiteral("rejoined");
    case ClusterEventKind::Regrouped:
        return QStringLiteral("regrouped");
    case ClusterEventKind::Rebalanced:
        return QStringLiteral("rebalanced");
    case ClusterEventKind::CollectiveFailed:
        return QStringLiteral("collective failed");
    case ClusterEventKind::Reassigned:
        return QStringLiteral("reassigned");
    }
    return QStringLiteral("unknown");
}

std::optional<ClusterEventKind> eventKindFromName(const QString &name)
{
    for (const ClusterEventKind k :
         {ClusterEventKind::Lost, ClusterEventKind::Failed, ClusterEventKind::Rejoined,
          ClusterEventKind::Regrouped, ClusterEventKind::Rebalanced,
          ClusterEventKind::CollectiveFailed, ClusterEventKind::Reassigned})
        if (eventKindName(k) == name)
            return k;
    return std::nullopt;
}

void saveClusterWeights(const core::ModelSpec &spec, std::uint64_t seed,
                        const std::vector<float> &weights, const std::string &path)
{
    core::Model model(spec, seed);
    core::FlatState flat(model);
    if (flat.averagedSize() != weights.size())
        throw core::FormatError("the nodes sent " + std::to_string(weights.size()) +
                                " floats of weights, the model has " +
                                std::to_string(flat.averagedSize()));
    flat.setAveraged(weights.data());
    core::Safetensors::saveModel(model, path);
}

} // namespace edgetrain::net
