#pragma once

#include <QByteArray>
#include <QString>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace edgetrain::net {

/**
 * The coordinator's end of the nodes' exchange probes (measurePairExchange): for each accepted
 * request, the other rank of a two-rank allreduce over the node's real path, on a thread of its
 * own, one probe at a time (a node asks during its link turn, so probes do not meet anyway).
 * The rank meets the node's through the coordinator's rendezvous store: what the node sets there
 * comes in through keySet(); what the rank sets goes out through `publish`, called on the host's
 * thread (queue it to the store's). The rank does nothing but the allreduces; its link and CPU
 * are part of every node's figure, so a coordinator on a slow link or a busy machine caps them.
 */
class ExchangeProbeHost
{
public:
    /** The store's key prefix of every probe: a request's is this, something, and no more. */
    static constexpr const char *kPrefix = "pair-exchange-";
    static constexpr int kMaxPrefixChars = 128;
    static constexpr std::size_t kMaxFloats = std::size_t(1) << 18; // 1 MB: the figure is per byte
    static constexpr int kMaxQueued = 64;

    using Publish = std::function<void(const QString &key, const QByteArray &value)>;
    /** Called on the host's thread when a probe's rank is done: empty, or what went wrong. */
    using Done = std::function<void(const QString &error)>;

    /** `timeout`: how long the rank waits for the node's (to arrive, and in each allreduce). */
    ExchangeProbeHost(Publish publish, std::chrono::milliseconds timeout);
    /** Fails a rank still waiting for its node and joins the thread: an allreduce under way
     *  with a node that vanished blocks the caller up to `timeout`. */
    ~ExchangeProbeHost();
    ExchangeProbeHost(const ExchangeProbeHost &) = delete;
    ExchangeProbeHost &operator=(const ExchangeProbeHost &) = delete;

    /** Every key set in the coordinator's store (the host keeps its probes' ones). */
    void keySet(const QString &key, const QByteArray &value);
    /** Queues a probe for `owner` (the asking member): the rank listens on `hostname` (where the
     *  node reaches the coordinator) under `prefix`. Returns an empty string, or why the request
     *  is refused (then `done` is not called): a bad prefix or size, no address, a probe of the
     *  same owner still queued or running, kMaxQueued waiting. */
    QString serve(int owner, const QString &prefix, const QString &hostname, std::size_t floats,
                  Done done);
    /** The owner is gone: its probes not started yet are dropped (their `done` not called); its
     *  rank under way stops waiting for the node's keys (an allreduce already under way ends
     *  within the timeout). A probe that waited in line longer than `timeout` is not started. */
    void forget(int owner);

private:
    struct State;
    class Store;
    std::unique_ptr<State> m_state;
};

} // namespace edgetrain::net
