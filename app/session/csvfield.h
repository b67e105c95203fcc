#pragma once

#include <QByteArray>
#include <QString>

namespace edgetrain::app {

/** A CSV field as RFC 4180 has it: quoted (quotes doubled) when it holds a comma, a quote or a
 *  line break — a node may be called "pi, rack 2". The session's CSV files and the CLI's
 *  `monitor --csv` write their text fields through it (header-only: the CLI does not link the
 *  session library). */
inline QByteArray csvField(const QString &s)
{
    if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) &&
        !s.contains(QLatin1Char('\n')))
        return s.toUtf8();
    QString q = s;
    q.replace(QLatin1String("\""), QLatin1String("\"\""));
    return '"' + q.toUtf8() + '"';
}

} // namespace edgetrain::app
