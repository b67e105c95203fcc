#pragma once

#include <QByteArray>
#include <QString>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace edgetrain::net {

struct ExchangeProbeHostState; // its thread's, shared with it

/**
 * The coordinator's end of the nodes' exchange probes (measurePairExchange): for each request,
 * the other rank of a two-rank allreduce over the node's real path, on a thread of its own, one
 * request at a time (a node asks during its link turn, so the probes do not meet anyway). The
 * rank meets the node's through the coordinator's rendezvous store: what the node sets there
 * comes in through keySet(); what the rank sets goes out through `publish` (called on the host's
 * thread: queue it to the store's). Its own rank does nothing but the allreduces.
 */
class ExchangeProbeHost
{
public:
    /** The store's key prefix of every probe (a request's must start with it). */
    static constexpr const char *kPrefix = "pair-exchange-";
    static constexpr std::size_t kMaxFloats = std::size_t(16) << 20; // 64 MB of gradients

    using Publish = std::function<void(const QString &key, const QByteArray &value)>;
    /** Called on the host's thread when a probe's rank is done: empty, or what went wrong. */
    using Done = std::function<void(const QString &error)>;

    ExchangeProbeHost(Publish publish, std::chrono::milliseconds timeout);
    /** Fails a rank still waiting for its peer and waits for the thread (an allreduce under way
     *  ends within the timeout). */
    ~ExchangeProbeHost();
    ExchangeProbeHost(const ExchangeProbeHost &) = delete;
    ExchangeProbeHost &operator=(const ExchangeProbeHost &) = delete;

    /** Every key set in the coordinator's store (the host keeps its probes' ones). */
    void keySet(const QString &key, const QByteArray &value);
    /** Queues a probe: the rank listens on `hostname` (where the node reaches the coordinator)
     *  under `prefix`. An empty string, or why the request is refused (then `done` is not
     *  called). */
    QString serve(const QString &prefix, const QString &hostname, std::size_t floats, Done done);

private:
    std::shared_ptr<ExchangeProbeHostState> m_state;
};

} // namespace edgetrain::net
