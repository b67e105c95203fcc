#pragma once

// A real edgetrain-node process for integration tests: any free control port, a random discovery
// port (retried if taken), no multicast (the test machine's default route must not see beacons).

#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QString>
#include <QStringList>

class NodeProcess
{
public:
    NodeProcess(const QString &name, const QString &keyFile, QStringList extra = {})
        : m_name(name), m_keyFile(keyFile), m_extra(std::move(extra))
    {
        launch();
    }
    ~NodeProcess()
    {
        if (process.state() != QProcess::NotRunning) {
            process.terminate();
            process.waitForFinished(3000);
        }
    }
    /** Starts the node again on the port it had (a device that comes back). */
    bool restart()
    {
        m_fixedPort = port;
        launch();
        return waitReady();
    }
    void kill()
    {
        process.kill();
        process.waitForFinished(3000);
    }
    /** Waits for the control port; a discovery port that happens to be taken gets another try. */
    bool waitReady()
    {
        for (int attempt = 0; attempt < 3; ++attempt) {
            if (waitPort())
                return true;
            process.waitForFinished(2000);
            if (!log().contains(QLatin1String("cannot bind discovery port")))
                return false;
            launch();
        }
        return false;
    }
    QString log()
    {
        m_log += QString::fromUtf8(process.readAllStandardError());
        return m_log;
    }
    /** Where the log ends now: what a step logs is logSince(mark), not what earlier ones did. */
    qsizetype logMark() { return log().size(); }
    QString logSince(qsizetype mark) { return log().mid(mark); }

    QProcess process;
    quint16 port = 0;
    quint16 discoveryPort = 0;

private:
    void launch()
    {
        discoveryPort = quint16(40000 + QRandomGenerator::global()->bounded(20000));
        process.setProgram(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node"));
        process.setArguments(QStringList{"--name", m_name, "--port", QString::number(m_fixedPort),
                                         "--discovery-port", QString::number(discoveryPort),
                                         "--no-multicast", "--key-file", m_keyFile,
                                         "--print-port"} +
                             m_extra);
        process.start();
    }
    bool waitPort()
    {
        QElapsedTimer t;
        t.start();
        QByteArray out;
        while (!out.contains('\n') && t.elapsed() < 5000 &&
               process.state() != QProcess::NotRunning) {
            process.waitForReadyRead(200);
            out += process.readAllStandardOutput();
        }
        port = quint16(out.trimmed().toUInt());
        return port != 0;
    }

    quint16 m_fixedPort = 0;
    QString m_name, m_keyFile;
    QStringList m_extra;
    QString m_log;
};
