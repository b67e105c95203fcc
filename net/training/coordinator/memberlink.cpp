#include "net/training/coordinator/memberlink.h"

#include "net/protocol/controlclient.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/protocol.h"

namespace edgetrain::net {

void MemberLink::reply(qint64 request, QCborMap body)
{
    if (request < 0)
        return;
    RequestId::setReplyTo(body, request);
    send(Message::Reply, body);
}

ClientLink::ClientLink(ControlClient *client) : m_client(client) {}

ClientLink::~ClientLink()
{
    m_client->disconnect();
    m_client->deleteLater();
}

const NodeInfo &ClientLink::info() const
{
    return m_client->node();
}

NodeId ClientLink::node() const
{
    return NodeId{m_client->node().name, m_client->host(), m_client->port()};
}

void ClientLink::send(const QString &type, const QCborMap &body)
{
    m_client->send(type, body);
}

QString ClientLink::localAddress() const
{
    return m_client->localAddress();
}

void ClientLink::listen(Handlers handlers)
{
    // The client is the context: its signals end with it, and it lives on the owner's thread.
    QObject::connect(m_client, &ControlClient::message, m_client, handlers.message);
    QObject::connect(m_client, &ControlClient::failed, m_client, handlers.lost);
    QObject::connect(m_client, &ControlClient::metrics, m_client, handlers.metrics);
    m_client->subscribeMetrics();
}

} // namespace edgetrain::net
