#pragma once
// The page count of a PDF the suites wrote, as poppler's pdfinfo reads it.

#include <QProcess>
#include <QRegularExpression>
#include <QString>

namespace edgetrain::tests {

/** -1 when pdfinfo cannot read the file. */
inline int pdfPages(const QString &pdf)
{
    QProcess p;
    p.start(QStringLiteral("pdfinfo"), {pdf});
    if (!p.waitForFinished(20000) || p.exitCode() != 0)
        return -1;
    const auto m = QRegularExpression(QStringLiteral("Pages:\\s+(\\d+)"))
                       .match(QString::fromUtf8(p.readAllStandardOutput()));
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

} // namespace edgetrain::tests
