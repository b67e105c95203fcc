#pragma once

#include "net/agent/systemsampler.h"
#include "net/protocol/frame.h"
#include "net/protocol/messages/nodeinfo.h"
#include "net/protocol/nodeid.h"

#include <QCborMap>
#include <QString>

#include <functional>

namespace edgetrain::net {

class ControlClient;

/**
 * The coordinator's line to one node, as the coordinator and its parts use it: messages out,
 * answers to the node's requests, and the node's messages, metrics and loss in. ClientLink is the
 * real one (the node's ControlClient); tests put a recording double in its place, so every part
 * of the coordinator runs without a process or a socket. Used on the thread that owns it.
 */
class MemberLink
{
public:
    /** Where what the node sends goes; called on the owner's thread. */
    struct Handlers
    {
        std::function<void(const Frame &)> message;
        std::function<void(const QString &reason)> lost;
        std::function<void(const SystemSample &)> metrics;
    };

    virtual ~MemberLink() = default;
    /** The node as it introduced itself in the handshake. */
    virtual const NodeInfo &info() const = 0;
    /** Its name and the address it was reached at. */
    virtual NodeId node() const = 0;
    virtual void send(const QString &type, const QCborMap &body = {}) = 0;
    /** Where the node reaches this coordinator (an exchange probe's rank listens there). */
    virtual QString localAddress() const = 0;
    /** From now on the node's messages, metrics and loss go to `handlers`. */
    virtual void listen(Handlers handlers) = 0;

    /** Answers the node's request `request` with `body` (a `reply` naming it); nothing for -1. */
    void reply(qint64 request, QCborMap body);
};

/** A MemberLink over a connected, authenticated ControlClient, which it owns: destroying the link
 *  disconnects it from everyone and deletes it (later: it may be emitting). */
class ClientLink final : public MemberLink
{
public:
    explicit ClientLink(ControlClient *client);
    ~ClientLink() override;
    ClientLink(const ClientLink &) = delete;
    ClientLink &operator=(const ClientLink &) = delete;

    const NodeInfo &info() const override;
    NodeId node() const override;
    void send(const QString &type, const QCborMap &body = {}) override;
    QString localAddress() const override;
    void listen(Handlers handlers) override;

private:
    ControlClient *m_client;
};

} // namespace edgetrain::net
