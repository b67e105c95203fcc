#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli dataset`: the session's tracks to student crops, split by track. */
class DatasetCommand
{
public:
    static int run(const QStringList &arguments);
};

/** `edgetrain-cli viewpoint`: label, dataset, train the student, evaluate against the teacher. */
class ViewpointCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
