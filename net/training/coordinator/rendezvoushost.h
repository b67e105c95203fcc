#pragma once

#include <QByteArray>
#include <QDeadlineTimer>
#include <QObject>
#include <QStringList>
#include <QTimer>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

namespace edgetrain::net {

class ExchangeProbeHost;
class MemberLink;
struct Frame;

/**
 * The key-value store the nodes' collectives form their groups through (gloo's rendezvous, reached
 * by RemoteStore over the control channel), kept by the coordinator: a set is stored and answered
 * at once, a get or wait is answered when its keys are all set, or with an error when the
 * deadline the node gave passes. Keys carry the group's generation ("gen-N/..."); a new
 * generation drops the older ones. It also hosts the profiles' exchange probes (the other rank of
 * a node's timed allreduce), which meet the node's rank through the same store.
 * Members are named by id; the link a request came on answers it, so a member's requests must be
 * forgotten (forget()) before its link goes. Runs on the thread that owns it.
 */
class RendezvousHost : public QObject
{
    Q_OBJECT

public:
    explicit RendezvousHost(QObject *parent = nullptr);
    ~RendezvousHost() override;

    /** A store_set, store_get or store_wait frame from member `owner`, answered on `link`. A
     *  malformed one is answered with its error. */
    void request(int owner, MemberLink &link, const Frame &frame);
    /** Hosts exchange probes from now on; `timeout` bounds each probe's waits. */
    void hostExchangeProbes(std::chrono::milliseconds timeout);
    bool hostsExchangeProbes() const { return m_exchangeHost != nullptr; }
    /** An exchange_probe frame from member `owner` (`label` names it in the log): answered at
     *  once on `link`, {} when its rank is queued, {"error"} when refused. */
    void exchangeProbe(int owner, MemberLink &link, const Frame &frame, const QString &label);
    /** The member is gone: its pending gets and waits are dropped unanswered, its probes too. */
    void forget(int owner);
    /** A new group generation: keys of earlier ones are of no use to anyone now. */
    void beginGeneration(int generation);
    /** Answers waits every 100 ms (their deadlines) until stop(). */
    void start();
    void stop();
    /** Answers the waits whose keys are all set, and fails those whose deadline passed. */
    void serveWaiters();

    bool contains(const QString &key) const { return m_store.count(key) > 0; }
    std::size_t size() const { return m_store.size(); }
    std::size_t waiting() const { return m_waiters.size(); }

private:
    struct Waiter
    {
        int owner = -1;
        MemberLink *link = nullptr;
        qint64 request = -1;
        QStringList keys;
        bool get = false;
        QDeadlineTimer deadline;
    };
    void set(const QString &key, const QByteArray &value);

    std::map<QString, QByteArray> m_store;
    std::vector<Waiter> m_waiters;
    QTimer m_timer;
    // Joins its thread when destroyed: before QObject's destructor, so what it posts here
    // arrives or is dropped with the object.
    std::unique_ptr<ExchangeProbeHost> m_exchangeHost;
};

} // namespace edgetrain::net
