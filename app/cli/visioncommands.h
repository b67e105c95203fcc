#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli label`: teacher + tracker propagation over a video, tracks to a session. */
class LabelCommand
{
public:
    static int run(const QStringList &arguments);
};

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
