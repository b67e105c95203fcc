#pragma once

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli study --preset pi-cluster|cluster-choice [--out DIR]`: the seed papers'
 * experiments on an edge lab (net/lab/clusterstudy.h says what each preset runs). Starts a lab in
 * DIR/lab (or uses one that is up: --lab), runs every job as an `edgetrain-cli train|plan --json`
 * of its own (its log in DIR/logs/), appends each result to DIR/runs.jsonl as it ends (running
 * the same command again continues an interrupted study), then writes the CSV files, the charts
 * (DIR/charts/NAME.png and .svg) and DIR/study.pdf, and takes its lab down.
 * Ctrl-C stops the run in progress (it is done again next time) and still writes what the
 * finished runs show. Exit status: 2 usage, 1 when cancelled or no run succeeded.
 */
class StudyCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
