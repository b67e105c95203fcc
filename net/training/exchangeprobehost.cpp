#include "net/training/exchangeprobehost.h"

#include "net/training/exchangeprobe.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/store.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace edgetrain::net {

struct ExchangeProbeHost::State
{
    struct Request
    {
        int owner = -1;
        std::string prefix, hostname;
        std::size_t floats = 0;
        Done done;
        std::chrono::steady_clock::time_point queued;
    };

    Publish publish;
    std::chrono::milliseconds timeout{10000};
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::string, std::vector<char>> keys; // the probes' keys, as set by either rank
    std::deque<Request> queue;
    int running = -1;       // the owner of the probe under way
    bool cancelled = false; // its owner is gone: stop waiting for its keys
    bool closing = false;
    std::thread thread;

    void run();
};

/** gloo's store for the coordinator's rank: the probes' keys, whichever rank set them. Waits
 *  end with gloo::IoException when the keys do not come in time or the host closes. */
class ExchangeProbeHost::Store : public gloo::rendezvous::Store
{
public:
    explicit Store(State &s) : m_s(s) {}

    void set(const std::string &key, const std::vector<char> &data) override
    {
        {
            std::lock_guard lock(m_s.mutex);
            m_s.keys[key] = data;
        }
        m_s.publish(QString::fromStdString(key), QByteArray(data.data(), qsizetype(data.size())));
    }

    std::vector<char> get(const std::string &key) override
    {
        wait({key});
        std::lock_guard lock(m_s.mutex);
        return m_s.keys.at(key);
    }

    void wait(const std::vector<std::string> &keys) override { wait(keys, m_s.timeout); }

    void wait(const std::vector<std::string> &keys,
              const std::chrono::milliseconds &timeout) override
    {
        std::unique_lock lock(m_s.mutex);
        const bool all = m_s.changed.wait_for(lock, timeout, [&] {
            return m_s.closing || m_s.cancelled ||
                   std::all_of(keys.begin(), keys.end(),
                               [&](const auto &k) { return m_s.keys.count(k) > 0; });
        });
        if (m_s.closing)
            throw gloo::IoException("the coordinator is closing");
        if (m_s.cancelled)
            throw gloo::IoException("the node is gone");
        if (!all)
            throw gloo::IoException("the node's rank did not arrive in time");
    }

private:
    State &m_s;
};

void ExchangeProbeHost::State::run()
{
    for (;;) {
        Request r;
        {
            std::unique_lock lock(mutex);
            changed.wait(lock, [&] { return closing || !queue.empty(); });
            if (closing)
                return;
            r = std::move(queue.front());
            queue.pop_front();
            running = r.owner;
            cancelled = false;
        }
        QString error;
        // One that waited longer than its node waits for it is stale: the node has given up.
        if (std::chrono::steady_clock::now() - r.queued > timeout) {
            error = QStringLiteral("it waited in line longer than the node waits");
        } else {
            try {
                Store store(*this);
                GroupOptions o;
                o.rank = 1;
                o.hostname = r.hostname;
                o.prefix = r.prefix;
                o.timeout = timeout;
                measurePairExchange(store, o, r.floats, 0.0); // the node's rank times it
            } catch (const std::exception &e) {
                error = QString::fromUtf8(e.what());
            }
        }
        {
            // The probe's keys are spent (a node asks again under a new prefix).
            std::lock_guard lock(mutex);
            const std::string mine = r.prefix + "/";
            for (auto it = keys.begin(); it != keys.end();)
                it = it->first.rfind(mine, 0) == 0 ? keys.erase(it) : std::next(it);
            running = -1;
        }
        r.done(error);
    }
}

ExchangeProbeHost::ExchangeProbeHost(Publish publish, std::chrono::milliseconds timeout)
    : m_state(std::make_unique<State>())
{
    m_state->publish = std::move(publish);
    m_state->timeout = timeout;
}

ExchangeProbeHost::~ExchangeProbeHost()
{
    {
        std::lock_guard lock(m_state->mutex);
        m_state->closing = true;
    }
    m_state->changed.notify_all();
    if (m_state->thread.joinable())
        m_state->thread.join();
}

void ExchangeProbeHost::keySet(const QString &key, const QByteArray &value)
{
    if (!key.startsWith(QLatin1String(kPrefix)))
        return;
    {
        std::lock_guard lock(m_state->mutex);
        m_state->keys[key.toStdString()] = std::vector<char>(value.begin(), value.end());
    }
    m_state->changed.notify_all();
}

QString ExchangeProbeHost::serve(int owner, const QString &prefix, const QString &hostname,
                                 std::size_t floats, Done done)
{
    const int prefixChars = int(std::strlen(kPrefix));
    if (!prefix.startsWith(QLatin1String(kPrefix)) || prefix.size() <= prefixChars ||
        prefix.size() > kMaxPrefixChars || prefix.contains(QLatin1Char('/')))
        return QStringLiteral("an exchange probe's prefix is '%1' and a name (no '/', at most %2 "
                              "characters in all)")
            .arg(QLatin1String(kPrefix))
            .arg(kMaxPrefixChars);
    if (floats < 2 || floats > kMaxFloats)
        return QStringLiteral("an exchange probe reduces 2 to %1 floats").arg(kMaxFloats);
    if (hostname.isEmpty())
        return QStringLiteral("no address to listen on for the exchange probe");
    {
        std::lock_guard lock(m_state->mutex);
        const bool queued = std::any_of(m_state->queue.begin(), m_state->queue.end(),
                                        [&](const auto &r) { return r.owner == owner; });
        if (queued || m_state->running == owner)
            return QStringLiteral("this node's last exchange probe is not done");
        if (m_state->queue.size() >= std::size_t(kMaxQueued))
            return QStringLiteral("too many exchange probes waiting");
        m_state->queue.push_back({owner, prefix.toStdString(), hostname.toStdString(), floats,
                                  std::move(done), std::chrono::steady_clock::now()});
        if (!m_state->thread.joinable())
            m_state->thread = std::thread([s = m_state.get()] { s->run(); });
    }
    m_state->changed.notify_all();
    return {};
}

void ExchangeProbeHost::forget(int owner)
{
    {
        std::lock_guard lock(m_state->mutex);
        std::erase_if(m_state->queue, [&](const auto &r) { return r.owner == owner; });
        if (m_state->running == owner)
            m_state->cancelled = true;
    }
    m_state->changed.notify_all();
}

} // namespace edgetrain::net
