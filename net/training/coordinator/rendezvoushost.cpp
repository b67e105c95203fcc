#include "net/training/coordinator/rendezvoushost.h"

#include "net/protocol/frame.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/jobspec.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/messages/storerequest.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/coordinator/memberlink.h"
#include "net/training/exchangeprobehost.h"
#include "net/training/trainingcoordinator.h"

#include <QLoggingCategory>

#include <algorithm>

namespace edgetrain::net {

RendezvousHost::RendezvousHost(QObject *parent) : QObject(parent)
{
    m_timer.setInterval(100);
    connect(&m_timer, &QTimer::timeout, this, &RendezvousHost::serveWaiters);
}

RendezvousHost::~RendezvousHost() = default;

void RendezvousHost::start()
{
    m_timer.start();
}

void RendezvousHost::stop()
{
    m_timer.stop();
}

void RendezvousHost::request(int owner, MemberLink &link, const Frame &frame)
{
    QString error;
    qint64 request = -1;
    const auto r = StoreRequest::fromCbor(frame.type, frame.body, &error, &request);
    if (!r) {
        link.reply(request, StoreReply{error, std::nullopt}.toCbor());
        return;
    }
    if (r->kind == StoreRequest::Kind::Set) {
        set(r->keys.front(), r->value);
        if (m_exchangeHost)
            m_exchangeHost->keySet(r->keys.front(), r->value);
        link.reply(r->request, StoreReply{}.toCbor());
        serveWaiters();
        return;
    }
    Waiter w;
    w.owner = owner;
    w.link = &link;
    w.request = r->request;
    w.get = r->kind == StoreRequest::Kind::Get;
    w.keys = r->keys;
    w.deadline = QDeadlineTimer(r->timeout_ms);
    m_waiters.push_back(std::move(w));
    serveWaiters();
}

void RendezvousHost::set(const QString &key, const QByteArray &value)
{
    m_store[key] = value;
}

void RendezvousHost::hostExchangeProbes(std::chrono::milliseconds timeout)
{
    // What the probe's rank sets comes from its thread: queued to ours, where the store lives.
    m_exchangeHost = std::make_unique<ExchangeProbeHost>(
        [this](const QString &key, const QByteArray &value) {
            QMetaObject::invokeMethod(
                this,
                [this, key, value] {
                    set(key, value);
                    serveWaiters();
                },
                Qt::QueuedConnection);
        },
        timeout);
}

void RendezvousHost::exchangeProbe(int owner, MemberLink &link, const Frame &frame,
                                   const QString &label)
{
    // Answered at once (queued, or refused); the probe's result is the node's to time. What
    // our rank met is logged: the node sees the same failure from its side.
    const qint64 request = RequestId::of(frame.body);
    if (!m_exchangeHost) {
        link.reply(request,
                   ExchangeProbeReply{QStringLiteral("this coordinator hosts no exchange probe")}
                       .toCbor());
        return;
    }
    QString error;
    const auto probe = ExchangeProbeRequest::fromCbor(frame.body, &error);
    if (!probe) {
        link.reply(request, ExchangeProbeReply{error}.toCbor());
        return;
    }
    const QString refused =
        m_exchangeHost->serve(owner, probe->prefix, link.localAddress(), std::size_t(probe->floats),
                              [label](const QString &failure) {
                                  if (!failure.isEmpty())
                                      qCWarning(lcCoordinator).noquote()
                                          << label
                                          << "- the exchange probe's rank here failed:" << failure;
                              });
    link.reply(request, ExchangeProbeReply{refused}.toCbor());
}

void RendezvousHost::forget(int owner)
{
    if (m_exchangeHost)
        m_exchangeHost->forget(owner);
    m_waiters.erase(std::remove_if(m_waiters.begin(), m_waiters.end(),
                                   [owner](const Waiter &w) { return w.owner == owner; }),
                    m_waiters.end());
}

void RendezvousHost::beginGeneration(int generation)
{
    GroupSpec group;
    group.generation = generation;
    const QString prefix = group.prefix() + QLatin1Char('/');
    for (auto it = m_store.begin(); it != m_store.end();)
        it = it->first.startsWith(prefix) ? std::next(it) : m_store.erase(it);
}

void RendezvousHost::serveWaiters()
{
    for (auto it = m_waiters.begin(); it != m_waiters.end();) {
        const Waiter &w = *it;
        const bool all = std::all_of(w.keys.begin(), w.keys.end(),
                                     [this](const QString &k) { return m_store.count(k) > 0; });
        if (all) {
            StoreReply reply;
            if (w.get)
                reply.value = m_store[w.keys.front()];
            w.link->reply(w.request, reply.toCbor());
        } else if (w.deadline.hasExpired()) {
            const QString error = QStringLiteral("'%1' not set in time: a peer did not arrive")
                                      .arg(w.keys.join(QStringLiteral("', '")));
            w.link->reply(w.request, StoreReply{error, std::nullopt}.toCbor());
        } else {
            ++it;
            continue;
        }
        it = m_waiters.erase(it);
    }
}

} // namespace edgetrain::net
