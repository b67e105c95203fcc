#pragma once

#include <QString>
#include <QtGlobal>

namespace edgetrain::app::wording {

// Words a customer reads without help, for the window, the reports and the headless demo alike:
// counts with the right plural, English ordinals.

/** "1 node", "3 nodes": `singular` for exactly one, else `plural`. */
QString counted(qint64 n, const QString &singular, const QString &plural);
/** An English ordinal: "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "112th". */
QString ordinal(int n);
/** "every frame" for n <= 1, else "every 2nd frame", "every 3rd frame" (with `noun`). */
QString everyNth(int n, const QString &noun);

} // namespace edgetrain::app::wording
