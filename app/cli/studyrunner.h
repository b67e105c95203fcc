#pragma once

#include "clicontext.h"
#include "net/lab/clusterstudy.h"
#include "net/lab/edgelab.h"

#include <QString>
#include <QStringList>

class QElapsedTimer;
class QFile;
class QProcess;

#include <chrono>
#include <map>

namespace edgetrain::app {

/**
 * The study's runs, each as an `edgetrain-cli train|plan --json` process of its own on the lab's
 * nodes: its messages to OUT/logs/, its epochs to the user as progress, its record appended to
 * runs.jsonl as it ends. A run is asked to stop (as Ctrl-C would) when the user stops the study
 * or it passes the run timeout, and killed 60 s later.
 */
class StudyRunner
{
public:
    StudyRunner(const CliContext &cli, const net::LabState &lab, QString out, QString recordsPath,
                std::chrono::milliseconds runTimeout);

    /** Runs one; false when the study was asked to stop (the run, if it started, is done again
     *  when the study continues). */
    bool run(const net::StudyRun &run, int index, int count);
    int ran() const { return m_ran; }
    bool cancelled() const { return m_cancelled; }

private:
    enum class Ending { Finished, TimedOut, Interrupted };
    QStringList argumentsFor(const net::StudyRun &run) const;
    /** Until the process ends: its messages to its log, its progress to the user. */
    Ending watch(QProcess &process, QFile &logFile, const QElapsedTimer &clock) const;
    /** The run's line: its time, or why it failed. */
    void say(const net::StudyRecord &record, const QString &log) const;

    const CliContext &m_cli;
    const net::LabState &m_lab;
    std::map<QString, QString> m_address; // node name -> host:port
    QString m_out, m_recordsPath;
    std::chrono::milliseconds m_runTimeout;
    int m_ran = 0;
    bool m_cancelled = false;
};

} // namespace edgetrain::app
