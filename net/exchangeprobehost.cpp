#include "exchangeprobehost.h"

#include "exchangeprobe.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/store.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace edgetrain::net {

struct ExchangeProbeHostState
{
    struct Request
    {
        std::string prefix, hostname;
        std::size_t floats = 0;
        ExchangeProbeHost::Done done;
    };

    ExchangeProbeHost::Publish publish;
    std::chrono::milliseconds timeout{10000};
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::string, std::vector<char>> keys; // the probes' keys, as set by either rank
    std::deque<Request> queue;
    bool closing = false;
    std::thread thread;

    void run();
};

namespace {

/** gloo's store for the coordinator's rank: the probes' keys, whichever rank set them. Waits
 *  end with gloo::IoException when the keys do not come in time or the host closes. */
class HostStore : public gloo::rendezvous::Store
{
public:
    explicit HostStore(ExchangeProbeHostState &s) : m_s(s) {}

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
            if (m_s.closing)
                return true;
            for (const auto &k : keys)
                if (!m_s.keys.count(k))
                    return false;
            return true;
        });
        if (m_s.closing)
            throw gloo::IoException("the coordinator is closing");
        if (!all)
            throw gloo::IoException("the node's rank did not arrive in time");
    }

private:
    ExchangeProbeHostState &m_s;
};

} // namespace

void ExchangeProbeHostState::run()
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
        }
        QString error;
        try {
            HostStore store(*this);
            GroupOptions o;
            o.rank = 1;
            o.hostname = r.hostname;
            o.prefix = r.prefix;
            o.timeout = timeout;
            measurePairExchange(store, o, r.floats, 0.0); // the node's rank times it
        } catch (const std::exception &e) {
            error = QString::fromUtf8(e.what());
        }
        {
            // The probe's keys are spent (a node asks again under a new prefix).
            std::lock_guard lock(mutex);
            for (auto it = keys.begin(); it != keys.end();)
                it = it->first.rfind(r.prefix, 0) == 0 ? keys.erase(it) : std::next(it);
        }
        r.done(error);
    }
}

ExchangeProbeHost::ExchangeProbeHost(Publish publish, std::chrono::milliseconds timeout)
    : m_state(std::make_shared<ExchangeProbeHostState>())
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

QString ExchangeProbeHost::serve(const QString &prefix, const QString &hostname, std::size_t floats,
                                 Done done)
{
    if (!prefix.startsWith(QLatin1String(kPrefix)) || prefix.size() > 128)
        return QStringLiteral("an exchange probe's prefix must start with '%1' (at most 128 "
                              "characters)")
            .arg(QLatin1String(kPrefix));
    if (floats < 2 || floats > kMaxFloats)
        return QStringLiteral("an exchange probe reduces 2 to %1 floats").arg(kMaxFloats);
    if (hostname.isEmpty())
        return QStringLiteral("no address to listen on for the exchange probe");
    {
        std::lock_guard lock(m_state->mutex);
        if (m_state->queue.size() >= 64)
            return QStringLiteral("too many exchange probes waiting");
        m_state->queue.push_back(
            {prefix.toStdString(), hostname.toStdString(), floats, std::move(done)});
        if (!m_state->thread.joinable())
            m_state->thread = std::thread([s = m_state.get()] { s->run(); });
    }
    m_state->changed.notify_all();
    return {};
}

} // namespace edgetrain::net
