#pragma once

#include "app/session/session.h"

#include <QString>

namespace edgetrain::app {

/**
 * Why two runs of one session can report different figures. Data-parallel training is repeatable
 * only up to float rounding: each device's share of a batch follows its measured speed, and
 * another split (or another group after a device dropped out) sums the same gradients in another
 * order. The report says how often that happened in this run and names the weights by their
 * SHA-256, so a reader can tell whether two reports scored the same student.
 */
struct RunRepeatability
{
    int shareChanges = 0;        // epochs whose batch shares differ from the epoch before
    int regroups = 0;            // groups formed after the first (a device lost, failed or back)
    int nodes = 0;               // devices the run trained on
    bool sharesRecorded = false; // a session from before the shares were kept has none
    QString weightsSha256;       // of the saved weights, hex; empty when there are none
};

/** The run's record in `session` and its weights file in the session's folder. */
RunRepeatability runRepeatability(const Session &session);

/** A paragraph for the report: empty when the run trained on one device (nothing to split). */
QString repeatabilityText(const RunRepeatability &r);

} // namespace edgetrain::app
