#include "plantext.h"

#include "charts.h"
#include "common.h"

#include <QCoreApplication>

namespace edgetrain::ui::plantext {

namespace {
QString tr(const char *text)
{
    return QCoreApplication::translate("PlanText", text);
}

QString bytes(std::int64_t b)
{
    return formatBytes(double(b));
}

QString times(double factor)
{
    return QString::number(factor, 'f', factor < 10 ? 2 : 1) + QStringLiteral("×");
}
} // namespace

QString tiling(const core::Model::Tiling &t)
{
    if (!t.active())
        return QString();
    return (t.stages == 1 ? tr("the first stage on %2×%3 tiles")
                          : tr("the first %1 stages on %2×%3 tiles").arg(t.stages))
        .arg(t.rows)
        .arg(t.cols);
}

QString tilingSentence(const app::PlanView &v)
{
    if (!v.error.isEmpty() || !v.tiled || v.request.budgetBytes < 0)
        return QString();
    const core::TiledPlan &t = *v.tiled;
    const core::MemoryPlan &untiled = v.plan;
    if (!t.tiling.active())
        return untiled.fits
                   ? tr("Tiling: not needed. The plan fits, and running the first stages on "
                        "tiles would not make the step shorter.")
                   : tr("Tiling would not make it fit either.");
    const QString what = tiling(t.tiling);
    if (!t.plan.fits)
        return tr("Tiling would not make it fit either: with %1 the smallest budget is %2 "
                  "(untiled %3).")
            .arg(what, bytes(t.plan.min_budget_bytes), bytes(untiled.min_budget_bytes));
    const QString detail =
        tr("%1: their activations %2 instead of %3, a peak of %4, the step about %5 as long as "
           "storing everything")
            .arg(what, bytes(t.group_peak_bytes), bytes(t.untiled_group_peak_bytes),
                 bytes(t.plan.predicted_peak_bytes), times(t.predicted_step_factor));
    const QString lead =
        untiled.fits ? tr("Tiles would make the step shorter: %1 (checkpointing alone: %2).")
                           .arg(detail, times(untiled.predicted_recompute_factor))
                     : tr("Tiles make it fit: %1.").arg(detail);
    return lead;
}

QString inputSentence(const app::PlanView &v)
{
    if (!v.error.isEmpty() || !v.alternative)
        return QString();
    const app::InputPlan &a = *v.alternative;
    const QString size = QStringLiteral("%1 × %2").arg(a.width).arg(a.height);
    if (!a.error.isEmpty())
        return tr("At %1 it cannot be planned: %2").arg(size, a.error);
    const double ratio = v.forwardFlops > 0 ? a.forwardFlops / v.forwardFlops : 0.0;
    // A smaller input's share as a fraction: "1/8.9 of the compute", not "0.11×".
    const QString share =
        ratio >= 1.0 || ratio <= 0.0
            ? QString::number(ratio, 'f', 1) + QStringLiteral("×")
            : tr("1/%1 of").arg(QString::number(1.0 / ratio, 'f', 1 / ratio < 10 ? 1 : 0));
    QString s = tr("At %1 a step is about %2 the compute of one at %3 × %4")
                    .arg(size, share)
                    .arg(v.request.width)
                    .arg(v.request.height);
    if (v.request.budgetBytes < 0)
        return s + tr(", with a peak of %1 storing everything.").arg(bytes(a.storeAllPeak));
    const QString budget = bytes(v.request.budgetBytes);
    const bool tiles = a.tiled && a.tiled->tiling.active();
    if (tiles && a.tiled->plan.fits)
        return s + tr("; it fits %1 with %2, each step about %3 as long as one at %4 × %5 storing "
                      "everything.")
                       .arg(budget, tiling(a.tiled->tiling),
                            times(ratio * a.tiled->predicted_step_factor))
                       .arg(v.request.width)
                       .arg(v.request.height);
    if (a.plan.fits)
        return s +
               tr("; it fits %1 with checkpointing, each step about %2 as long as one at %3 × %4 "
                  "storing everything.")
                   .arg(budget, times(ratio * a.plan.predicted_recompute_factor))
                   .arg(v.request.width)
                   .arg(v.request.height);
    const std::int64_t floor =
        tiles ? std::min(a.tiled->plan.min_budget_bytes, a.minimumBudget) : a.minimumBudget;
    return s + tr("; it does not fit %1: it needs at least %2%3.")
                   .arg(budget, bytes(floor),
                        tiles && floor < a.minimumBudget ? tr(" with tiles") : QString());
}

} // namespace edgetrain::ui::plantext
