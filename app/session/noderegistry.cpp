#include "noderegistry.h"

#include "net/protocol/keyfile.h"
#include "net/protocol/nodeid.h"

#include <QFileInfo>
#include <QHostInfo>

#include <algorithm>
#include <chrono>

namespace edgetrain::app {

namespace {
constexpr auto kLostAfter = std::chrono::seconds(5); // discovery silence before "lost"
}

QString nodeStateName(NodeView::State state)
{
    switch (state) {
    case NodeView::State::Found:
        return QStringLiteral("locked (not paired)");
    case NodeView::State::Pairing:
        return QStringLiteral("pairing…");
    case NodeView::State::Paired:
        return QStringLiteral("paired");
    case NodeView::State::Locked:
        return QStringLiteral("locked: key refused");
    case NodeView::State::Lost:
        return QStringLiteral("lost");
    }
    return {};
}

NodeRegistry::NodeRegistry(QObject *parent) : QObject(parent)
{
    m_lostTimer.setInterval(1000);
    connect(&m_lostTimer, &QTimer::timeout, this, &NodeRegistry::markSilentNodesLost);
    m_lostTimer.start();
}

void NodeRegistry::markSilentNodesLost()
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    for (auto &[key, n] : m_nodes)
        if (n.discovered && n.state == NodeView::State::Found &&
            n.lastSeen.secsTo(now) >= kLostAfter.count()) {
            n.state = NodeView::State::Lost;
            n.detail = QStringLiteral("no answer to discovery since %1")
                           .arg(n.lastSeen.toLocalTime().toString(QStringLiteral("HH:mm:ss")));
        }
    Q_EMIT nodesChanged(); // "last seen" moves on
}

bool NodeRegistry::setKeyFile(const QString &path, QString *error)
{
    QByteArray key;
    if (!net::readKeyFile(path, &key, error))
        return false;
    m_key = key;
    Q_EMIT keyLoaded(QFileInfo(path).absoluteFilePath());
    return true;
}

bool NodeRegistry::newKeyFile(const QString &path, net::ExistingKey existing, QString *error)
{
    if (!net::writeNewKeyFile(path, error, existing) || !setKeyFile(path, error))
        return false;
    Q_EMIT message(QStringLiteral("wrote a new cluster key to '%1' (fingerprint %2); each device "
                                  "needs a copy of it")
                       .arg(path, keyFingerprint()));
    return true;
}

QString NodeRegistry::keyFingerprint() const
{
    return m_key.isEmpty() ? QString() : net::keyFingerprint(m_key);
}

bool NodeRegistry::addProbe(const QString &hostPort, QString *error)
{
    QList<QPair<QString, quint16>> list; // as the user wrote them: a name stays a name
    if (!net::parseHostPorts(hostPort, &list, error))
        return false;
    startDiscovery();
    for (const auto &[host, port] : list) {
        if (const QHostAddress address(host); !address.isNull()) {
            m_browser->addTarget({address, port});
            Q_EMIT probeAdded(net::hostPort(host, port));
            continue;
        }
        // A name is looked up without holding the GUI thread; it is kept (in the session) once it
        // resolves, and one that does not is said and dropped.
        QHostInfo::lookupHost(host, this, [this, host = host, port = port](const QHostInfo &info) {
            QHostAddress address;
            QString problem;
            if (net::resolvedAddress(host, info, &address, &problem)) {
                m_browser->addTarget({address, port});
                Q_EMIT probeAdded(net::hostPort(host, port));
            } else {
                Q_EMIT message(
                    QStringLiteral("probe %1: %2").arg(net::hostPort(host, port), problem));
            }
        });
    }
    return true;
}

void NodeRegistry::startDiscovery()
{
    if (m_browser)
        return;
    m_browser = new net::NodeBrowser(this);
    m_browser->addTarget({net::discoveryGroup(), net::kDiscoveryPort});
    connect(m_browser, &net::NodeBrowser::nodeSeen, this, &NodeRegistry::onNodeSeen);
    QString error;
    if (!m_browser->start(std::chrono::seconds(1), &error))
        Q_EMIT message(QStringLiteral("discovery is off: %1").arg(error));
}

void NodeRegistry::onNodeSeen(const net::NodeInfo &info)
{
    const QString host = info.address.toString();
    const QString key = QStringLiteral("%1:%2").arg(host).arg(info.control_port);
    NodeView &n = m_nodes[key];
    const bool fresh = n.key.isEmpty();
    n.key = key;
    n.host = host;
    n.port = info.control_port;
    if (n.state != NodeView::State::Paired || n.info.id.isEmpty())
        n.info = info;
    else
        n.info.load = info.load;
    n.discovered = true;
    n.lastSeen = QDateTime::currentDateTimeUtc();
    if (n.state == NodeView::State::Lost && !m_monitors.count(key)) {
        n.state = NodeView::State::Found;
        n.detail.clear();
    }
    if (fresh)
        Q_EMIT message(QStringLiteral("found node '%1' at %2").arg(info.name, key));
    // A node the session had paired is paired again as soon as it answers.
    if (m_pairAgain.count(key) && hasKey() && n.state == NodeView::State::Found)
        pair(key);
    Q_EMIT nodesChanged();
}

bool NodeRegistry::addNode(const QString &hostPort, QString *error)
{
    QList<QPair<QString, quint16>> list;
    if (!net::parseHostPorts(hostPort, &list, error))
        return false;
    for (const auto &[host, port] : list) {
        const QString key = QStringLiteral("%1:%2").arg(host).arg(port);
        NodeView &n = m_nodes[key];
        if (n.key.isEmpty()) {
            n.key = key;
            n.host = host;
            n.port = port;
            n.info.name = host;
            n.lastSeen = QDateTime::currentDateTimeUtc();
        }
        if (hasKey())
            pair(key);
    }
    Q_EMIT nodesChanged();
    return true;
}

void NodeRegistry::restore(const std::vector<SessionNode> &nodes)
{
    m_pairAgain.clear();
    for (const SessionNode &n : nodes) {
        const QString key = QStringLiteral("%1:%2").arg(n.host).arg(n.port);
        if (n.paired)
            m_pairAgain.insert(key);
        if (!m_nodes.count(key)) {
            NodeView v;
            v.key = key;
            v.host = n.host;
            v.port = n.port;
            v.info.name = n.name;
            v.state = NodeView::State::Lost;
            v.detail = QStringLiteral("not heard from yet");
            m_nodes[key] = v;
        }
        if (n.paired && hasKey())
            pair(key);
    }
    Q_EMIT nodesChanged();
}

void NodeRegistry::pair(const QString &key)
{
    const auto it = m_nodes.find(key);
    if (it == m_nodes.end())
        return;
    if (!hasKey()) {
        Q_EMIT message(QStringLiteral("load the cluster key first (Nodes → Cluster key)"));
        return;
    }
    if (m_monitors.count(key))
        return;
    NodeView &n = it->second;
    n.state = NodeView::State::Pairing;
    n.detail.clear();
    auto *c = new net::ControlClient(n.host, n.port, m_key, this);
    m_monitors[key] = c;
    connect(c, &net::ControlClient::ready, this, [this, key, c](const net::NodeInfo &info) {
        NodeView &v = m_nodes[key];
        const QHostAddress address = v.info.address;
        v.info = info;
        v.info.address = address;
        v.state = NodeView::State::Paired;
        v.lastSeen = QDateTime::currentDateTimeUtc();
        c->subscribeMetrics();
        m_pairAgain.insert(key);
        Q_EMIT paired(v);
        Q_EMIT message(QStringLiteral("paired with '%1'").arg(info.name));
        Q_EMIT nodesChanged();
    });
    connect(c, &net::ControlClient::metrics, this, [this, key](const net::SystemSample &s) {
        NodeView &v = m_nodes[key];
        v.sample = s;
        v.lastSeen = QDateTime::currentDateTimeUtc();
    });
    connect(c, &net::ControlClient::failed, this, [this, key, c](const QString &reason) {
        NodeView &v = m_nodes[key];
        const bool wasPaired = v.state == NodeView::State::Paired;
        v.state = wasPaired ? NodeView::State::Lost : NodeView::State::Locked;
        if (!wasPaired && !reason.contains(QLatin1String("key")))
            v.state = NodeView::State::Lost; // not a refusal: nobody answered
        v.detail = reason;
        m_monitors.erase(key);
        c->deleteLater();
        Q_EMIT message(QStringLiteral("%1: %2").arg(v.info.name, reason));
        Q_EMIT nodesChanged();
    });
    c->connectToNode();
    Q_EMIT nodesChanged();
}

void NodeRegistry::pairAll()
{
    for (auto &[key, n] : m_nodes)
        if (n.state == NodeView::State::Found || n.state == NodeView::State::Locked)
            pair(key);
}

void NodeRegistry::forget(const QString &key)
{
    if (const auto m = m_monitors.find(key); m != m_monitors.end()) {
        m->second->close();
        m->second->deleteLater();
        m_monitors.erase(m);
    }
    const auto it = m_nodes.find(key);
    if (it == m_nodes.end())
        return;
    m_pairAgain.erase(key);
    Q_EMIT forgotten(it->second);
    m_nodes.erase(it);
    Q_EMIT nodesChanged();
}

QStringList NodeRegistry::pairedNodes() const
{
    QStringList names;
    for (const auto &[key, n] : m_nodes)
        if (n.state == NodeView::State::Paired)
            names.append(n.info.name);
    return names;
}

QString NodeRegistry::clusterSummary() const
{
    int paired = 0, found = 0, lost = 0;
    for (const auto &[key, n] : m_nodes) {
        paired += n.state == NodeView::State::Paired;
        found += n.state == NodeView::State::Found || n.state == NodeView::State::Locked ||
                 n.state == NodeView::State::Pairing;
        lost += n.state == NodeView::State::Lost;
    }
    return QStringLiteral("%1 paired · %2 locked · %3 lost").arg(paired).arg(found).arg(lost);
}

} // namespace edgetrain::app
