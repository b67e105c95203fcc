#include "net/training/coordinator/rejoiner.h"

#include "net/protocol/controlclient.h"
#include "net/training/coordinator/member.h"

namespace edgetrain::net {

Rejoiner::Rejoiner(QByteArray clusterKey, Lost lost, Answered answered, QObject *parent)
    : QObject(parent), m_key(std::move(clusterKey)), m_lost(std::move(lost)),
      m_answered(std::move(answered))
{
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &Rejoiner::callBack);
}

void Rejoiner::callBack()
{
    for (Member *m : m_lost()) {
        if (m->connecting)
            continue;
        m->connecting = true;
        auto *client = new ControlClient(m->node.host, m->node.port, m_key, parent());
        connect(client, &ControlClient::ready, this, [this, m, client] {
            client->disconnect(this);
            m->connecting = false;
            m_answered(*m, client);
        });
        connect(client, &ControlClient::failed, this, [m, client] {
            m->connecting = false;
            client->deleteLater();
        });
        client->connectToNode(std::chrono::milliseconds(1500));
    }
}

} // namespace edgetrain::net
