#pragma once

#include "app/session/plannerworker.h"

#include <QString>

namespace edgetrain::ui {

/** The Plan step's sentences about a plan's alternatives, in plain words. */
namespace plantext {

/** "the first 2 stages on 4×4 tiles" (empty for no tiling). */
QString tiling(const core::Model::Tiling &tiling);

/**
 * What tiling the early stages would do for the plan's budget, in one sentence: that it makes
 * the plan fit or the step shorter (the group's activations tiled against untiled, the step
 * against storing everything), that it would not help, or that the plan fits as cheaply without
 * it. Empty without a budget or a tiled choice.
 */
QString tilingSentence(const app::PlanView &plan);

/** The request's alternative input in one sentence: its compute per step against this input's,
 *  and whether and how it fits the budget. Empty without an alternative. */
QString inputSentence(const app::PlanView &plan);

} // namespace plantext

} // namespace edgetrain::ui
