#pragma once

// A MemberLink that records what the coordinator (or one of its parts) sends a node, and plays
// the node: receive() delivers a message from it, lose() its loss. For tests without a process or
// a socket; used on the test's thread (onSend may hand replies to other threads).

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/protocol.h"
#include "net/training/coordinator/memberlink.h"

#include <functional>
#include <optional>
#include <vector>

class FakeMemberLink : public edgetrain::net::MemberLink
{
public:
    struct Sent
    {
        QString type;
        QCborMap body;
    };

    explicit FakeMemberLink(const QString &name = QStringLiteral("node"), quint16 port = 1)
        : m_port(port)
    {
        m_info.name = name;
        m_info.shipment_encodings = {QStringLiteral("palette8")};
    }

    const edgetrain::net::NodeInfo &info() const override { return m_info; }
    edgetrain::net::NodeId node() const override
    {
        return {m_info.name, QStringLiteral("127.0.0.1"), m_port};
    }
    void send(const QString &type, const QCborMap &body = {}) override
    {
        sent.push_back({type, body});
        if (onSend)
            onSend(type, body);
    }
    QString localAddress() const override { return QStringLiteral("127.0.0.1"); }
    void listen(Handlers handlers) override { m_handlers = std::move(handlers); }

    /** The node sends `type`; with `request` >= 0 it waits for an answer to it. */
    void receive(const QString &type, QCborMap body = {}, qint64 request = -1)
    {
        if (request >= 0)
            edgetrain::net::RequestId::set(body, request);
        m_handlers.message(edgetrain::net::Frame{0, type, body, true});
    }
    /** The connection fails (the coordinator then destroys this link). */
    void lose(const QString &reason) { m_handlers.lost(reason); }

    /** The answer to the node's request `request`, if one was sent. */
    std::optional<QCborMap> replyTo(qint64 request) const
    {
        for (const Sent &s : sent)
            if (s.type == edgetrain::net::Message::Reply &&
                edgetrain::net::RequestId::replyTo(s.body) == request)
                return s.body;
        return std::nullopt;
    }
    /** The answer to request `request` read as what it must be. */
    template <typename Reply> std::optional<Reply> replyTo(qint64 request) const
    {
        const auto body = replyTo(request);
        if (!body)
            return std::nullopt;
        if constexpr (requires(const QCborMap &m, QString *e) { Reply::fromCbor(m, e); }) {
            QString error;
            return Reply::fromCbor(*body, &error);
        } else {
            return Reply::fromCbor(*body);
        }
    }
    /** The training answer's action ("start", "stop", ...), "" when none was sent. */
    QString actionTo(qint64 request) const
    {
        const auto r = replyTo<edgetrain::net::TrainingReply>(request);
        return r ? edgetrain::net::actionName(r->action) : QString();
    }
    int count(const QString &type) const
    {
        int n = 0;
        for (const Sent &s : sent)
            n += s.type == type;
        return n;
    }

    std::vector<Sent> sent;
    std::function<void(const QString &type, const QCborMap &body)> onSend;

private:
    edgetrain::net::NodeInfo m_info;
    quint16 m_port;
    Handlers m_handlers;
};
