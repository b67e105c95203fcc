#pragma once

#include <QString>

#include <functional>

namespace edgetrain::app {

/** Progress of one step of the session's work, from the thread that does it: `done` of `total`
 *  steps and what is being done. The same type as TaskRunner::Report, so the window's tasks
 *  hand theirs on; the CLI prints it. */
using StepProgress = std::function<void(int done, int total, const QString &text)>;

} // namespace edgetrain::app
