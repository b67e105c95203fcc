#include "wording.h"

#include <cstdlib>

namespace edgetrain::app::wording {

QString counted(qint64 n, const QString &singular, const QString &plural)
{
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? singular : plural);
}

QString ordinal(int n)
{
    // 11th, 12th and 13th break the rule of the last digit.
    const int tens = std::abs(n) % 100, ones = std::abs(n) % 10;
    const char *suffix = tens >= 11 && tens <= 13 ? "th"
                         : ones == 1              ? "st"
                         : ones == 2              ? "nd"
                         : ones == 3              ? "rd"
                                                  : "th";
    return QString::number(n) + QLatin1String(suffix);
}

QString everyNth(int n, const QString &noun)
{
    return n <= 1 ? QStringLiteral("every %1").arg(noun)
                  : QStringLiteral("every %1 %2").arg(ordinal(n), noun);
}

} // namespace edgetrain::app::wording
