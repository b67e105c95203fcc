#pragma once

#include "net/protocol/controlclient.h"
#include "net/protocol/keyfile.h"
#include "session.h"

#include <QDateTime>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <map>
#include <optional>
#include <set>
#include <vector>

namespace edgetrain::app {

/** A node as the Nodes step shows it. Keyed by its control address (host:port). */
struct NodeView
{
    enum class State { Found, Pairing, Paired, Locked, Lost };
    QString key; // host:port of the control port
    QString host;
    quint16 port = 0;
    net::NodeInfo info;
    State state = State::Found;
    QString detail; // why it is locked or lost
    QDateTime lastSeen;
    std::optional<net::SystemSample> sample;
    bool discovered = false; // answered a discovery probe (else: added by address)
};
QString nodeStateName(NodeView::State state);

/**
 * The nodes the app knows (step 1): found by discovery (multicast and unicast probes) or added
 * by address, paired with the cluster key (the HMAC handshake of net::ControlClient), and then
 * watched through their metrics stream. A node discovery has not heard for 5 s is marked lost.
 * Lives on the GUI thread.
 *
 * The registry does not write the session: it says what the session should record (keyLoaded,
 * probeAdded, paired, forgotten) and the Workflow records it. Refusals come back as `false` with
 * the reason in `*error`; what goes wrong later (a node refusing the key, a lost connection) is
 * said through message() and shown in the node's state.
 */
class NodeRegistry : public QObject
{
    Q_OBJECT

public:
    explicit NodeRegistry(QObject *parent = nullptr);

    /** Reads the cluster key; false (and the key unchanged) if the file cannot be used. */
    bool setKeyFile(const QString &path, QString *error);
    /**
     * Writes a new cluster key to `path` (net::writeNewKeyFile: mode 0600; an existing file is
     * replaced only if `existing` says so) and uses it from now on, as setKeyFile does. Nodes
     * paired with the old key stay paired until their connection ends; the others need the new
     * key. False with the reason if the key cannot be written or read back.
     */
    bool newKeyFile(const QString &path, net::ExistingKey existing, QString *error);
    bool hasKey() const { return !m_key.isEmpty(); }
    QByteArray key() const { return m_key; }
    /** The key's fingerprint (net::keyFingerprint), to compare with a device's; empty without
     *  a key. */
    QString keyFingerprint() const;

    /** Adds unicast discovery addresses (host:port, comma-separated; IP addresses only), probed
     *  every second. Starts discovery if it is off. */
    bool addProbe(const QString &hostPort, QString *error);
    /** Starts discovery (multicast and the probes); idempotent. A socket that cannot be opened
     *  is said through message(). */
    void startDiscovery();
    /** A node typed in by its control address; paired at once if the key is loaded. */
    bool addNode(const QString &hostPort, QString *error);
    /**
     * The nodes a session recorded: those not known yet are shown as lost until heard from; the
     * ones it had paired are paired again now (if the key is loaded) and whenever discovery finds
     * them. Replaces the previous session's list of nodes to pair again.
     */
    void restore(const std::vector<SessionNode> &nodes);
    /** Pairs the node `key` (host:port); without the key loaded, says so through message(). */
    void pair(const QString &key);
    /** Pairs every node found or locked. */
    void pairAll();
    /** Closes the node's connection and drops it (emits forgotten() first). */
    void forget(const QString &key);

    const std::map<QString, NodeView> &all() const { return m_nodes; }
    /** The paired nodes, by name. */
    QStringList pairedNodes() const;
    /** "2 paired · 1 locked · 0 lost". */
    QString clusterSummary() const;

Q_SIGNALS:
    void nodesChanged();
    void message(const QString &text); // for the status bar
    void keyLoaded(const QString &absolutePath);
    void probeAdded(const QString &hostPort);
    void paired(const edgetrain::app::NodeView &node);
    void forgotten(const edgetrain::app::NodeView &node);

private:
    void onNodeSeen(const net::NodeInfo &info);
    void markSilentNodesLost();

    QByteArray m_key;
    std::map<QString, NodeView> m_nodes;
    std::map<QString, net::ControlClient *> m_monitors; // by key: pairing or paired
    std::set<QString> m_pairAgain;                      // keys the session had paired
    net::NodeBrowser *m_browser = nullptr;
    QTimer m_lostTimer;
};

} // namespace edgetrain::app
