#pragma once

#include "core/json.h"

#include <QByteArray>
#include <QStringList>

#include <algorithm>
#include <vector>

/** The small readings and writings the study's records and its analyses share. */
namespace edgetrain::net::studyfields {

/** A number of a run's result, or `otherwise` where the result has none. */
inline double number(const core::Json &j, const char *name, double otherwise = 0.0)
{
    const core::Json *v = j.find(name);
    return v && v->isNumber() ? v->toDouble() : otherwise;
}

inline QStringList names(const core::Json *array)
{
    QStringList list;
    if (array && array->isArray())
        for (const core::Json &n : array->toArray())
            if (n.isString())
                list.append(QString::fromStdString(n.toString()));
    return list;
}

/** A CSV cell, locale-free. */
inline QByteArray num(double v)
{
    return QByteArray::number(v, 'g', 6);
}

inline double median(std::vector<double> v)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace edgetrain::net::studyfields
