#pragma once
// Runs the built edgetrain-cli as a user would, for the app suites (tst_cli, tst_truthcli).

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>

namespace edgetrain::tests {

struct CliRun
{
    int status = -1; // the exit status; -1 if it crashed or did not finish in time
    QString out;
    QString err;
    QJsonObject json; // the last stdout line, when it is a JSON object
};

inline CliRun runCli(const QStringList &args, int timeout_ms = 300000)
{
    QProcess p;
    p.start(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-cli"), args);
    CliRun r;
    if (!p.waitForFinished(timeout_ms))
        return r;
    r.status = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    const QStringList lines = r.out.trimmed().split(QLatin1Char('\n'));
    r.json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
    return r;
}

} // namespace edgetrain::tests
