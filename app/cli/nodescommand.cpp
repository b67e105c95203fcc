#include "nodescommand.h"

#include "app/session/csvfield.h"
#include "clicontext.h"
#include "core/error.h"
#include "core/numbertext.h"
#include "net/protocol/controlclient.h"
#include "net/protocol/keyfile.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QTimer>

#include <cstdio>
#include <map>

namespace edgetrain::app {

namespace {

core::Json nodeJson(const net::NodeInfo &n)
{
    core::Json j;
    j.set("id", n.id.toStdString()).set("name", n.name.toStdString());
    j.set("address", n.address.toString().toStdString()).set("port", int(n.control_port));
    j.set("arch", n.arch.toStdString()).set("cores", n.cores).set("ram_bytes", n.ram_bytes);
    j.set("load", n.load)
        .set("version", n.version.toStdString())
        .set("cpu_model", n.cpu_model.toStdString())
        .set("key_fingerprint", n.key_fingerprint.toStdString());
    return j;
}

} // namespace

int NodesCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("nodes"),
                   QStringLiteral("List the EdgeTrain nodes that answer on the LAN: by multicast, "
                                  "or at the addresses given with --probe (site networks often "
                                  "block multicast)."),
                   arguments);
    cli.addOption("timeout", "How long to listen.", "DURATION", "3s");
    cli.addOption("probe", "Ask these discovery addresses instead of the multicast group.",
                  "HOST:PORT,...");
    cli.addOption("discovery-port", "Discovery port of the multicast group.", "P",
                  QString::number(net::kDiscoveryPort));
    if (!cli.parse())
        return ExitSuccess;
    const auto timeout = parseDuration(cli.text("timeout"), "timeout");
    QList<net::DiscoveryProbe::Target> targets;
    if (cli.isSet("probe")) {
        QString error;
        if (!net::parseDiscoveryTargets(QString::fromStdString(cli.text("probe")), &targets,
                                        &error))
            throw UsageError("--probe: " + error.toStdString());
    } else {
        targets.append({net::discoveryGroup(), quint16(cli.integer("discovery-port", 1, 65535))});
    }
    QString error;
    net::DiscoveryProbe probe;
    const QList<net::NodeInfo> nodes = probe.run(targets, timeout, &error);
    if (!error.isEmpty())
        throw core::IoError(error.toStdString());
    cli.message(std::to_string(nodes.size()) + " node(s) answered");
    for (const auto &n : nodes) {
        char line[256];
        std::snprintf(
            line, sizeof line, "  %-16s %s:%u  %s, %d cores, %s RAM, load %.2f, key %s  (%s)",
            qPrintable(n.name), qPrintable(n.address.toString()), unsigned(n.control_port),
            qPrintable(n.arch), n.cores, core::NumberText::bytes(n.ram_bytes).c_str(), n.load,
            n.key_fingerprint.isEmpty() ? "not said" : qPrintable(n.key_fingerprint),
            qPrintable(n.id));
        cli.message(line);
    }
    if (cli.json()) {
        core::Json list = core::Json::array();
        for (const auto &n : nodes)
            list.push(nodeJson(n));
        core::Json json;
        json.set("command", "nodes").set("nodes", std::move(list));
        cli.printJson(json);
    }
    return ExitSuccess;
}

int MonitorCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("monitor"),
                   QStringLiteral("Stream live metrics (CPU, memory, network, frequency, "
                                  "temperature) of nodes, about once a second, until Ctrl-C."),
                   arguments);
    cli.addOption("nodes", "Nodes to watch.", "HOST:PORT,...");
    cli.addOption("key-file", "Cluster key file.", "F");
    cli.addOption("csv", "Also append every sample to this CSV file.", "FILE");
    cli.addOption("duration", "Stop after this long.", "DURATION");
    if (!cli.parse())
        return ExitSuccess;
    QList<QPair<QString, quint16>> addresses;
    QString error;
    if (!cli.isSet("nodes") ||
        !net::parseHostPorts(QString::fromStdString(cli.text("nodes")), &addresses, &error))
        throw UsageError("--nodes: " +
                         (error.isEmpty() ? std::string("required") : error.toStdString()));
    QByteArray key;
    if (!net::readKeyFile(QString::fromStdString(cli.text("key-file")), &key, &error))
        throw core::IoError(error.toStdString());
    std::optional<std::chrono::milliseconds> duration;
    if (cli.isSet("duration"))
        duration = parseDuration(cli.text("duration"), "duration");

    std::unique_ptr<QFile> csv;
    if (cli.isSet("csv")) {
        csv = std::make_unique<QFile>(QString::fromStdString(cli.text("csv")));
        const bool fresh = !csv->exists() || csv->size() == 0;
        if (!csv->open(QIODevice::Append | QIODevice::Text))
            throw core::IoError("cannot write '" + cli.text("csv") +
                                "': " + csv->errorString().toStdString());
        if (fresh)
            csv->write(
                "time,node,address,cpu_percent,agent_cpu_percent,agent_rss_bytes,memory_available_"
                "bytes,"
                "net_rx_bytes_per_second,net_tx_bytes_per_second,load1,cpu_mhz,temperature_c,"
                "agent_rx_bytes_per_second,agent_tx_bytes_per_second,power_watts,power_source,"
                "energy_joules\n");
    }

    std::map<QString, int> samples;
    std::vector<std::unique_ptr<net::ControlClient>> clients;
    int live = int(addresses.size());
    for (const auto &[host, port] : addresses) {
        auto client = std::make_unique<net::ControlClient>(host, port, key);
        net::ControlClient *c = client.get();
        QObject::connect(c, &net::ControlClient::ready, c, [&cli, c](const net::NodeInfo &n) {
            cli.message("connected to '" + n.name.toStdString() + "' at " +
                        c->address().toStdString() + " (" + n.arch.toStdString() + ", " +
                        std::to_string(n.cores) + " cores)");
            c->subscribeMetrics();
        });
        QObject::connect(c, &net::ControlClient::metrics, c, [&, c](const net::SystemSample &s) {
            ++samples[c->address()];
            char line[384];
            std::snprintf(
                line, sizeof line,
                "%-14s cpu %5.1f%% (agent %4.1f%%)  agent rss %s  available %s  rx %s/s  "
                "tx %s/s (the agent's own: rx %s/s tx %s/s)  load %.2f",
                qPrintable(c->node().name), s.cpu_percent, s.agent_cpu_percent,
                core::NumberText::bytes(s.agent_rss_bytes).c_str(),
                core::NumberText::bytes(s.memory_available_bytes).c_str(),
                core::NumberText::bytes(std::int64_t(s.net_rx_bytes_per_second)).c_str(),
                core::NumberText::bytes(std::int64_t(s.net_tx_bytes_per_second)).c_str(),
                core::NumberText::bytes(std::int64_t(s.agent_rx_bytes_per_second)).c_str(),
                core::NumberText::bytes(std::int64_t(s.agent_tx_bytes_per_second)).c_str(),
                s.load1);
            cli.message(line);
            if (csv) {
                const QString row =
                    QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17\n")
                        .arg(QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs),
                             QString::fromUtf8(csvField(c->node().name)),
                             QString::fromUtf8(csvField(c->address())))
                        .arg(s.cpu_percent, 0, 'f', 2)
                        .arg(s.agent_cpu_percent, 0, 'f', 2)
                        .arg(s.agent_rss_bytes)
                        .arg(s.memory_available_bytes)
                        .arg(s.net_rx_bytes_per_second, 0, 'f', 1)
                        .arg(s.net_tx_bytes_per_second, 0, 'f', 1)
                        .arg(s.load1, 0, 'f', 2)
                        .arg(s.cpu_mhz ? QString::number(*s.cpu_mhz, 'f', 0) : QString())
                        .arg(s.temperature_c ? QString::number(*s.temperature_c, 'f', 1)
                                             : QString())
                        .arg(s.agent_rx_bytes_per_second, 0, 'f', 1)
                        .arg(s.agent_tx_bytes_per_second, 0, 'f', 1)
                        .arg(s.power_watts ? QString::number(*s.power_watts, 'f', 3) : QString())
                        .arg(QString::fromUtf8(csvField(s.power_source)))
                        .arg(s.energy_joules, 0, 'f', 3);
                csv->write(row.toUtf8());
                csv->flush(); // every sample on disk as it arrives
            }
        });
        QObject::connect(c, &net::ControlClient::failed, c, [&cli, &live](const QString &reason) {
            cli.message("error: " + reason.toStdString());
            if (--live == 0)
                QCoreApplication::exit(ExitFailure);
        });
        c->connectToNode();
        clients.push_back(std::move(client));
    }
    CliContext::installStopHandler();
    QTimer stopPoll;
    QObject::connect(&stopPoll, &QTimer::timeout, [] {
        if (CliContext::stopFlag()->load())
            QCoreApplication::exit(ExitSuccess);
    });
    stopPoll.start(100);
    if (duration)
        QTimer::singleShot(*duration, [] { QCoreApplication::exit(ExitSuccess); });
    const int status = QCoreApplication::exec();
    for (auto &c : clients)
        c->close();
    if (cli.json()) {
        core::Json list = core::Json::array();
        for (const auto &c : clients) {
            core::Json j;
            j.set("address", c->address().toStdString()).set("name", c->node().name.toStdString());
            j.set("samples", samples[c->address()]);
            list.push(std::move(j));
        }
        core::Json json;
        json.set("command", "monitor").set("nodes", std::move(list));
        cli.printJson(json);
    }
    return status;
}

} // namespace edgetrain::app
