#include "net/training/linkprobe.h"

#include "core/cputime.h"
#include "core/error.h"

#include <QPointer>
#include <QTcpSocket>
#include <QUuid>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace edgetrain::net {

namespace {

/** One probe connection on the server side: checks the token, then answers requests. */
class ProbeSession : public QObject
{
public:
    ProbeSession(QTcpSocket *socket, QByteArray token, std::function<void()> ended)
        : QObject(socket), m_socket(socket), m_token(std::move(token)), m_ended(std::move(ended))
    {
        connect(socket, &QTcpSocket::bytesWritten, this, [this] { refill(); });
        connect(socket, &QTcpSocket::disconnected, this, [this] { end(); });
        connect(socket, &QTcpSocket::readyRead, this, [this] { onReadable(); });
    }
    /** Its turn: one session is served at a time, so probes do not share the machine's link.
     *  False if it has gone already (ended, its deletion not yet done): nobody's turn. */
    bool activate()
    {
        if (m_gone || m_socket->state() != QAbstractSocket::ConnectedState)
            return false;
        m_active = true;
        onReadable(); // what it sent while it waited
        return true;
    }

private:
    void end()
    {
        m_gone = true;
        // A session that waited its turn and went away frees nobody's turn.
        if (m_active && m_ended)
            std::exchange(m_ended, nullptr)();
        m_socket->deleteLater();
    }
    void refuse()
    {
        m_socket->abort();
        end();
    }
    void onReadable()
    {
        while (m_socket->bytesAvailable() > 0) {
            if (m_uploadLeft > 0) {
                const QByteArray chunk = m_socket->read(std::min<qint64>(m_uploadLeft, 1 << 20));
                m_uploadLeft -= chunk.size();
                if (m_uploadLeft == 0)
                    m_socket->write("u", 1);
                continue;
            }
            if (!m_trusted) { // first the run's token, as the job (authenticated) gave it
                if (m_socket->bytesAvailable() < m_token.size())
                    return;
                if (m_socket->read(m_token.size()) != m_token)
                    return refuse();
                m_trusted = true;
                continue;
            }
            if (m_socket->bytesAvailable() < 9)
                return;
            char header[9];
            if (!m_active) {
                // Waiting its turn, a connection whose first request asks "is it my turn?" is
                // told no, and this side closes it (the node measures later, in line). Any other
                // request waits for its turn unread.
                if (m_socket->peek(header, 1) != 1 || header[0] != 'T')
                    return;
                m_socket->read(header, 9);
                m_socket->write("w", 1);
                m_socket->disconnectFromHost();
                return;
            }
            if (++m_requests > LinkProbeServer::kMaxRequests)
                return refuse();
            m_socket->read(header, 9);
            std::uint64_t n = 0;
            for (int i = 8; i >= 1; --i)
                n = (n << 8) | std::uint8_t(header[i]);
            const auto bytes = std::int64_t(std::min<std::uint64_t>(n, LinkProbeServer::kMaxBytes));
            if (header[0] == 'E') {
                m_socket->write("e", 1);
            } else if (header[0] == 'T') {
                m_socket->write("g", 1); // its turn: it measures now
            } else if (header[0] == 'U') {
                m_uploadLeft = bytes;
                if (bytes == 0)
                    m_socket->write("u", 1);
            } else if (header[0] == 'D') {
                m_downloadLeft = bytes;
                refill();
            } else {
                return refuse(); // not a probe
            }
        }
    }
    /** Keeps a few MiB queued while a download is under way. */
    void refill()
    {
        static const QByteArray block(1 << 20, '\0');
        while (m_downloadLeft > 0 && m_socket->bytesToWrite() < (4 << 20)) {
            const qint64 n = std::min<qint64>(m_downloadLeft, block.size());
            m_socket->write(block.constData(), n);
            m_downloadLeft -= n;
        }
    }

    QTcpSocket *m_socket;
    QByteArray m_token;
    std::function<void()> m_ended;
    bool m_active = false;
    bool m_gone = false; // ended: its socket closed or refused
    bool m_trusted = false;
    int m_requests = 0;
    std::int64_t m_uploadLeft = 0;
    std::int64_t m_downloadLeft = 0;
};

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Socket
{
    int fd = -1;
    ~Socket()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

} // namespace

LinkProbeServer::LinkProbeServer(QObject *parent)
    : QObject(parent), m_token(QUuid::createUuid().toByteArray(QUuid::Id128))
{
    connect(&m_server, &QTcpServer::newConnection, this, &LinkProbeServer::onConnection);
}

LinkProbeServer::~LinkProbeServer() = default;

bool LinkProbeServer::listen()
{
    return m_server.listen(QHostAddress::Any, 0);
}

void LinkProbeServer::onConnection()
{
    while (QTcpSocket *socket = m_server.nextPendingConnection()) {
        socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
        m_waiting.push_back(new ProbeSession(socket, m_token, [this] {
            m_busy = false;
            serveNext();
        }));
    }
    serveNext();
}

void LinkProbeServer::serveNext()
{
    while (!m_busy && !m_waiting.empty()) {
        const QPointer<QObject> next = m_waiting.front();
        m_waiting.pop_front();
        if (!next)
            continue; // it went away while it waited
        m_busy = true;
        // One that ended while it waited may not be deleted yet (every ready socket is handled
        // in one pass of the event loop): its turn would never end.
        if (!static_cast<ProbeSession *>(next.data())->activate())
            m_busy = false;
    }
}

namespace {

/** measureLink's work; with `ifFree`, first asks for its turn and returns nothing if another
 *  node's probe is under way. */
std::optional<LinkMeasurement> measure(const QString &host, quint16 port, const QByteArray &token,
                                       bool ifFree, const std::function<bool()> &whileServed)
{
    const auto began = Clock::now();
    const std::string where = host.toStdString() + ":" + std::to_string(port);
    auto fail = [&](const char *what) {
        const bool timeout = errno == EAGAIN || errno == EWOULDBLOCK;
        throw core::IoError(
            "link probe to " + where + ": " + what + ": " +
            (timeout ? std::string("no answer within 30 s") : std::strerror(errno)));
    };
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (::getaddrinfo(host.toStdString().c_str(), std::to_string(port).c_str(), &hints, &found) !=
            0 ||
        !found)
        throw core::IoError("link probe: cannot resolve " + where);
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> info(found, &::freeaddrinfo);
    Socket s;
    s.fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s.fd < 0)
        fail("socket");
    const timeval timeout{30, 0}; // it may wait while the others probe
    ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    const int one = 1;
    ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(s.fd, found->ai_addr, found->ai_addrlen) != 0)
        fail("connect");

    std::vector<char> buffer(1 << 20);
    auto sendAll = [&](const char *data, std::size_t n) {
        while (n > 0) {
            const ssize_t k = ::send(s.fd, data, n, MSG_NOSIGNAL);
            if (k <= 0)
                fail("send");
            data += k;
            n -= std::size_t(k);
        }
    };
    auto request = [&](char command, std::int64_t bytes) {
        char header[9] = {command};
        for (int i = 1; i <= 8; ++i)
            header[i] = char((std::uint64_t(bytes) >> (8 * (i - 1))) & 0xff);
        sendAll(header, sizeof header);
    };
    auto receive = [&](std::int64_t n) {
        while (n > 0) {
            const ssize_t k =
                ::recv(s.fd, buffer.data(),
                       std::size_t(std::min<std::int64_t>(n, std::int64_t(buffer.size()))), 0);
            if (k == 0)
                throw core::IoError("link probe to " + where + ": the coordinator closed it");
            if (k < 0)
                fail("receive");
            n -= k;
        }
    };

    sendAll(token.constData(), std::size_t(token.size()));
    if (ifFree) {
        request('T', 0);
        receive(1);
        if (buffer[0] != 'g')
            return std::nullopt; // another node measures: later
    }
    LinkMeasurement m;
    m.rtt_seconds = 1e9;
    for (int i = 0; i < 5; ++i) {
        const auto t = Clock::now();
        request('E', 0);
        receive(1);
        m.rtt_seconds = std::min(m.rtt_seconds, since(t));
    }
    // Still this node's turn, the connection open: the exchange with the coordinator, which may
    // stand for the transfers.
    if (whileServed && !whileServed()) {
        m.seconds = since(began);
        return m;
    }
    // Grows until a transfer takes 50 ms, then keeps the better of two at that size; and the
    // thread's CPU time per byte over the kept ones.
    auto rate = [&](char command, double *cpuPerByte) {
        std::int64_t bytes = 256 << 10;
        double best = 0.0, cpu = 0.0, moved = 0.0;
        for (int kept = 0; kept < 2;) {
            const double cpuBefore = core::threadCpuSeconds();
            const auto t = Clock::now();
            request(command, bytes);
            if (command == 'U') {
                for (std::int64_t left = bytes; left > 0;) {
                    const auto n =
                        std::size_t(std::min<std::int64_t>(left, std::int64_t(buffer.size())));
                    sendAll(buffer.data(), n);
                    left -= std::int64_t(n);
                }
                receive(1);
            } else {
                receive(bytes);
            }
            const double seconds = since(t) - m.rtt_seconds;
            if (seconds < 0.05 && bytes < LinkProbeServer::kMaxBytes) {
                // Straight to the size the rate just seen moves in ~90 ms (at least twice the
                // last, at most 64 times): growing fourfold took a gigabit link five transfers
                // to pass 50 ms and then two of 130 ms; 90 ms is what a 100 Mbit/s link's kept
                // transfers took before (shorter ones read it up to 9 % fast on the lab).
                const double grow = std::clamp(0.09 / std::max(seconds, 1e-4), 2.0, 64.0);
                bytes = std::min(LinkProbeServer::kMaxBytes, std::int64_t(double(bytes) * grow));
                continue;
            }
            best = std::max(best, double(bytes) / std::max(seconds, 1e-6));
            cpu += core::threadCpuSeconds() - cpuBefore;
            moved += double(bytes);
            ++kept;
        }
        *cpuPerByte = moved > 0 ? cpu / moved : 0.0;
        return best;
    };
    m.up_bytes_per_second = rate('U', &m.up_cpu_seconds_per_byte);
    m.down_bytes_per_second = rate('D', &m.down_cpu_seconds_per_byte);
    m.rates_timed = true;
    m.seconds = since(began);
    return m;
}

} // namespace

LinkMeasurement measureLink(const QString &host, quint16 port, const QByteArray &token,
                            const std::function<bool()> &whileServed)
{
    return *measure(host, port, token, false, whileServed);
}

std::optional<LinkMeasurement> measureLinkIfFree(const QString &host, quint16 port,
                                                 const QByteArray &token,
                                                 const std::function<bool()> &whileServed)
{
    return measure(host, port, token, true, whileServed);
}

} // namespace edgetrain::net
