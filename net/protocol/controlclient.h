#pragma once

#include "net/agent/systemsampler.h"
#include "net/protocol/controlchannel.h"
#include "net/protocol/discovery.h"
#include "net/protocol/messages/nodeinfo.h"

#include <QObject>
#include <QTimer>

class QHostInfo;
class QUdpSocket;

namespace edgetrain::net {

/**
 * The controller's side of one node connection (the app, edgetrain-cli). Connects, proves the
 * cluster key and checks that the node proves it too (a node without the key cannot pose as
 * one), then delivers the node's replies and metrics. Runs on the thread that owns it.
 */
class ControlClient : public QObject
{
    Q_OBJECT

public:
    ControlClient(QString host, quint16 port, QByteArray clusterKey, QObject *parent = nullptr);

    void connectToNode(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
    /** Asks for metrics about once a second; from then on a node that sends nothing for
     *  `silence` is reported as failed ("stopped answering"), even if TCP still looks open. */
    void subscribeMetrics(std::chrono::milliseconds silence = std::chrono::milliseconds(3500));
    void send(const QString &type, const QCborMap &body = {});
    void close();
    QString address() const; // host:port, an IPv6 host in brackets
    const QString &host() const { return m_host; }
    /** This side's address of the connection: where the node reaches us. */
    QString localAddress() const;
    quint16 port() const { return m_port; }
    const NodeInfo &node() const { return m_node; }
    bool isReady() const { return m_ready; }

Q_SIGNALS:
    void ready(const edgetrain::net::NodeInfo &node);
    void metrics(const edgetrain::net::SystemSample &sample);
    void message(const edgetrain::net::Frame &frame); // any other authenticated reply
    void failed(const QString &reason);

private:
    void onFrame(const Frame &frame);
    void fail(const QString &reason);

    QString m_host;
    quint16 m_port;
    QByteArray m_key;
    QByteArray m_nonce;
    ControlChannel *m_channel = nullptr;
    QTimer m_timeout;
    QTimer m_silence; // restarted by every frame once metrics are subscribed
    NodeInfo m_node;
    bool m_ready = false;
    bool m_failed = false;
};

/**
 * Finds nodes without blocking (the app): sends a probe to every target about once a second
 * (datagrams get lost; nodes come and go) and reports each answer. Targets are the multicast
 * group's discovery port and any unicast discovery addresses (site networks often block
 * multicast). Runs on the thread that owns it.
 */
class NodeBrowser : public QObject
{
    Q_OBJECT

public:
    struct Target
    {
        QHostAddress address;
        quint16 port;
        bool operator==(const Target &o) const { return address == o.address && port == o.port; }
    };
    explicit NodeBrowser(QObject *parent = nullptr);
    void setTargets(const QList<Target> &targets) { m_targets = targets; }
    void addTarget(const Target &target);
    const QList<Target> &targets() const { return m_targets; }
    /** Opens the socket and probes now and then every `interval`; false with a message if the
     *  socket cannot be opened. */
    bool start(std::chrono::milliseconds interval, QString *error);
    void stop();
    void probeNow();

Q_SIGNALS:
    void nodeSeen(const edgetrain::net::NodeInfo &node);

private:
    QUdpSocket *m_socket = nullptr;
    QTimer m_timer;
    QList<Target> m_targets;
};

/** Probes for a while and collects the nodes that answer (the CLI), by id. */
class DiscoveryProbe : public QObject
{
    Q_OBJECT

public:
    using Target = NodeBrowser::Target;
    explicit DiscoveryProbe(QObject *parent = nullptr);
    /** Blocks in a local event loop for `timeout`; returns the nodes heard, by id. */
    QList<NodeInfo> run(const QList<Target> &targets, std::chrono::milliseconds timeout,
                        QString *error);
};

/** Parses "host:port[,host:port...]" (an IPv6 host in brackets: "[fe80::1]:45454"); throws
 *  nothing, returns false with a message. */
bool parseHostPorts(const QString &text, QList<QPair<QString, quint16>> *out, QString *error);

/** Discovery targets from "host:port[,host:port...]": IP addresses as they are, names (also
 *  "localhost") resolved, an IPv4 address preferred (the nodes answer on IPv4). False with a
 *  message naming the entry that is neither an address nor a name that resolves. The one parser
 *  for `nodes --probe` and `train --discover --probe`; it waits for name lookups, so the app's
 *  probe field parses with parseHostPorts() and looks names up with QHostInfo::lookupHost(),
 *  choosing by resolvedAddress(). */
bool parseDiscoveryTargets(const QString &text, QList<NodeBrowser::Target> *out, QString *error);

/** The address a looked-up name is probed at (IPv4 preferred); false with a message naming
 *  `host` when it did not resolve. */
bool resolvedAddress(const QString &host, const QHostInfo &info, QHostAddress *address,
                     QString *error);

} // namespace edgetrain::net
