#include "studyrunner.h"

#include "core/error.h"
#include "core/numbertext.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>

#include <cmath>
#include <csignal>
#include <unistd.h>

namespace edgetrain::app {

namespace {

using net::ClusterStudy;
using net::StudyRecord;
using net::StudyRun;

/** "3 of 5: lenet5 b64 sync on pi3b-1+pi3b-2" */
QString describe(const StudyRun &run)
{
    if (run.kind == StudyRun::Kind::Plan)
        return QStringLiteral("plan for %1 b%2 over %3 nodes")
            .arg(run.job.model)
            .arg(run.job.batch)
            .arg(run.nodes.size());
    const QString text = QStringLiteral("%1 b%2 %3 on %4")
                             .arg(run.job.model)
                             .arg(run.job.batch)
                             .arg(net::modeName(run.mode), run.nodes.join(QLatin1Char('+')));
    return run.measurement > 1 ? text + QStringLiteral(", measurement %1").arg(run.measurement)
                               : text;
}

QString fileSafe(QString key)
{
    for (QChar &c : key)
        if (!c.isLetterOrNumber() && c != QLatin1Char('-') && c != QLatin1Char('.'))
            c = QLatin1Char('_');
    return key;
}

/** The last line of `out` that is a JSON object, parsed; null if there is none. */
core::Json lastJson(const QByteArray &out, const QString &source)
{
    const QList<QByteArray> lines = out.split('\n');
    for (auto it = lines.crbegin(); it != lines.crend(); ++it) {
        const QByteArray line = it->trimmed();
        if (line.startsWith('{'))
            return core::Json::parse(std::string_view(line.constData(), std::size_t(line.size())),
                                     source.toStdString());
    }
    return core::Json();
}

} // namespace

StudyRunner::StudyRunner(const CliContext &cli, const net::LabState &lab, QString out,
                         QString recordsPath, std::chrono::milliseconds runTimeout)
    : m_cli(cli), m_lab(lab), m_out(std::move(out)), m_recordsPath(std::move(recordsPath)),
      m_runTimeout(runTimeout)
{
    for (const net::LabNode &n : lab.nodes)
        m_address[n.name] = n.address + QLatin1Char(':') + QString::number(n.port);
}

bool StudyRunner::run(const StudyRun &run, int index, int count)
{
    if (CliContext::stopFlag()->load()) {
        m_cancelled = true;
        return false;
    }
    const QStringList args = argumentsFor(run);
    const QString log = m_out + QStringLiteral("/logs/%1-%2.log")
                                    .arg(index, 3, 10, QLatin1Char('0'))
                                    .arg(fileSafe(run.key()));
    m_cli.message(
        QStringLiteral("[%1/%2] %3").arg(index).arg(count).arg(describe(run)).toStdString());
    QFile logFile(log);
    if (!logFile.open(QIODevice::WriteOnly | QIODevice::Truncate))
        throw core::IoError("cannot write '" + log.toStdString() + "'");
    QProcess process;
    // Its own process group: a Ctrl-C at the terminal reaches the study alone, which
    // then asks the run to stop once (a second SIGINT would kill it before it stops
    // its nodes' job).
    process.setChildProcessModifier([] { ::setpgid(0, 0); });
    QElapsedTimer clock;
    clock.start();
    process.start(QCoreApplication::applicationFilePath(), args);
    if (!process.waitForStarted(10000))
        throw core::IoError("cannot start '" +
                            QCoreApplication::applicationFilePath().toStdString() +
                            "': " + process.errorString().toStdString());
    const Ending ending = watch(process, logFile, clock);
    logFile.close();
    if (ending == Ending::Interrupted) {
        m_cancelled = true;
        m_cli.message("stopped: this run is done again when the study continues");
        return false;
    }
    StudyRecord record;
    record.run = run;
    record.wall_seconds = double(clock.elapsed()) / 1000.0;
    record.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    try {
        record.result = lastJson(process.readAllStandardOutput(), log);
    } catch (const core::Error &e) {
        record.error = QString::fromUtf8(e.what());
    }
    const core::Json *error = record.result.find("error");
    if (ending == Ending::TimedOut)
        record.error = QStringLiteral("stopped after the run timeout");
    else if (error && error->isString() && !error->toString().empty())
        record.error = QString::fromStdString(error->toString());
    else if (record.exit_code != 0 && record.error.isEmpty())
        record.error = QStringLiteral("exit status %1").arg(record.exit_code);
    ClusterStudy::appendRecord(m_recordsPath, record);
    ++m_ran;
    say(record, log);
    return true;
}

QStringList StudyRunner::argumentsFor(const StudyRun &run) const
{
    QStringList nodes;
    for (const QString &n : run.nodes)
        nodes.append(m_address.at(n));
    QStringList args{
        run.kind == StudyRun::Kind::Plan ? QStringLiteral("plan") : QStringLiteral("train"),
        QStringLiteral("--nodes"), nodes.join(QLatin1Char(',')), QStringLiteral("--key-file"),
        m_lab.key_file, QStringLiteral("--model"), run.job.model, QStringLiteral("--batch"),
        QString::number(run.job.batch), QStringLiteral("--train-limit"),
        QString::number(run.job.train_limit), QStringLiteral("--test-limit"),
        QString::number(run.job.test_limit), QStringLiteral("--epochs"),
        QString::number(run.job.epochs),
        // Fashion-MNIST's shape: a CIFAR ResNet trains at it too
        QStringLiteral("--input"), QStringLiteral("1x28x28"), QStringLiteral("--json")};
    if (run.kind == StudyRun::Kind::Plan)
        args << QStringLiteral("--modes") << QStringLiteral("sync") << QStringLiteral("--objective")
             << QStringLiteral("time");
    else
        args << QStringLiteral("--mode") << net::modeName(run.mode);
    return args;
}

StudyRunner::Ending StudyRunner::watch(QProcess &process, QFile &logFile,
                                       const QElapsedTimer &clock) const
{
    Ending ending = Ending::Finished;
    qint64 askedAt = -1; // when the run was asked to stop
    QByteArray pending;
    auto drain = [&] {
        // its messages to its log; its epochs' lines to the user, as progress
        const QByteArray chunk = process.readAllStandardError();
        logFile.write(chunk);
        pending += chunk;
        qsizetype end;
        while ((end = pending.indexOf('\n')) >= 0) {
            const QByteArray line = pending.left(end);
            pending.remove(0, end + 1);
            if (line.startsWith("epoch ") || line.startsWith("plan: ") ||
                line.startsWith("chosen: "))
                m_cli.message("  " + line.toStdString());
        }
    };
    while (!process.waitForFinished(200)) {
        drain();
        const bool stop = CliContext::stopFlag()->load();
        const bool late = clock.elapsed() > m_runTimeout.count();
        if (askedAt < 0 && (stop || late)) {
            // as Ctrl-C would: the run stops its nodes' job and says so
            ::kill(pid_t(process.processId()), SIGINT);
            ending = stop ? Ending::Interrupted : Ending::TimedOut;
            askedAt = clock.elapsed();
        }
        if (askedAt >= 0 && clock.elapsed() - askedAt > 60000) {
            m_cli.message("  the run did not stop within 60 s of being asked: killed");
            process.kill();
            process.waitForFinished(5000);
            break;
        }
    }
    drain();
    return ending;
}

void StudyRunner::say(const StudyRecord &record, const QString &log) const
{
    const core::Json *seconds = record.result.find("training_seconds");
    const core::Json *accuracy = record.result.find("test_accuracy");
    std::string line = "  " + core::NumberText::format(std::round(record.wall_seconds)) + " s";
    if (!record.ok())
        line += ": failed: " + record.error.toStdString() + " (log: " + log.toStdString() + ")";
    else if (seconds && seconds->isNumber())
        line += ", training " +
                core::NumberText::format(std::round(seconds->toDouble() * 100) / 100) + " s" +
                (accuracy && accuracy->isNumber()
                     ? ", test accuracy " + formatPercent(accuracy->toDouble())
                     : std::string());
    m_cli.message(line);
}

} // namespace edgetrain::app
