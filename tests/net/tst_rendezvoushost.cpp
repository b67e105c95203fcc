// The coordinator's rendezvous host (net::RendezvousHost), without a process: requests come from
// recording links, and a group of ranks, threads of this process, forms its gloo mesh through it
// over JobLinks, as the nodes' collectives do over the control channel.

#include "fakememberlink.h"
#include "net/protocol/frame.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/messages/storerequest.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/collectives.h"
#include "net/training/coordinator/rendezvoushost.h"
#include "net/training/joblink.h"
#include "net/training/remotestore.h"

#include <QTest>

#include <future>
#include <memory>

using namespace edgetrain;

namespace {

net::Frame frame(const QString &type, QCborMap body, qint64 request)
{
    net::RequestId::set(body, request);
    return net::Frame{0, type, body, true};
}

net::Frame frame(const net::StoreRequest &r, qint64 request)
{
    return frame(r.messageType(), r.toCbor(), request);
}

net::Frame set(const QString &key, const QByteArray &value, qint64 request)
{
    net::StoreRequest r;
    r.kind = net::StoreRequest::Kind::Set;
    r.keys = {key};
    r.value = value;
    return frame(r, request);
}

net::Frame get(const QString &key, qint64 request, qint64 timeout_ms = 10000)
{
    net::StoreRequest r;
    r.kind = net::StoreRequest::Kind::Get;
    r.keys = {key};
    r.timeout_ms = timeout_ms;
    return frame(r, request);
}

net::Frame wait(const QStringList &keys, qint64 request, qint64 timeout_ms)
{
    net::StoreRequest r;
    r.kind = net::StoreRequest::Kind::Wait;
    r.keys = keys;
    r.timeout_ms = timeout_ms;
    return frame(r, request);
}

net::Frame exchangeProbe(const QString &prefix, qint64 request)
{
    return frame(net::Message::ExchangeProbe, net::ExchangeProbeRequest{prefix, 1024}.toCbor(),
                 request);
}

/** The store's answer to request `request` on `link`. */
std::optional<net::StoreReply> answer(const FakeMemberLink &link, qint64 request)
{
    return link.replyTo<net::StoreReply>(request);
}

} // namespace

class TestRendezvousHost : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void setIsStoredAndAnswered();
    void getWaitsForItsKey();
    void waitFailsAtItsDeadline();
    void malformedRequestsAreRefused();
    void aForgottenMemberIsNotAnswered();
    void aNewGenerationDropsTheOlderKeys();
    void exchangeProbesNeedAHost();
    void ranksFormAGroupThroughIt_data();
    void ranksFormAGroupThroughIt();
};

void TestRendezvousHost::setIsStoredAndAnswered()
{
    net::RendezvousHost host;
    FakeMemberLink a(QStringLiteral("a")), b(QStringLiteral("b"));
    host.request(0, a, set(QStringLiteral("gen-0/x"), "address of a", 1));
    QVERIFY(answer(a, 1).has_value());
    QVERIFY(answer(a, 1)->error.isEmpty());
    QVERIFY(host.contains(QStringLiteral("gen-0/x")));
    host.request(1, b, get(QStringLiteral("gen-0/x"), 7));
    QVERIFY(answer(b, 7).has_value());
    QCOMPARE(answer(b, 7)->value, std::optional<QByteArray>("address of a"));
    QCOMPARE(host.waiting(), std::size_t(0));
}

void TestRendezvousHost::getWaitsForItsKey()
{
    net::RendezvousHost host;
    FakeMemberLink a(QStringLiteral("a")), b(QStringLiteral("b"));
    // The host answers at once or queues: nothing is sent before the key is set.
    host.request(1, b, get(QStringLiteral("k"), 3));
    host.request(1, b, wait({QStringLiteral("k"), QStringLiteral("l")}, 4, 10000));
    QVERIFY(b.sent.empty());
    QCOMPARE(host.waiting(), std::size_t(2));
    host.request(0, a, set(QStringLiteral("k"), "v", 1));
    QCOMPARE(answer(b, 3)->value, std::optional<QByteArray>("v"));
    QVERIFY(!b.replyTo(4).has_value()); // "l" still missing
    host.request(0, a, set(QStringLiteral("l"), "w", 2));
    QVERIFY(answer(b, 4).has_value());
    QVERIFY(answer(b, 4)->error.isEmpty());
    QVERIFY(!answer(b, 4)->value.has_value()); // a wait answers no value
    QCOMPARE(host.waiting(), std::size_t(0));
}

void TestRendezvousHost::waitFailsAtItsDeadline()
{
    net::RendezvousHost host;
    host.start();
    FakeMemberLink b;
    host.request(1, b, wait({QStringLiteral("never")}, 5, 100));
    QVERIFY(!b.replyTo(5).has_value());
    QTRY_VERIFY_WITH_TIMEOUT(b.replyTo(5).has_value(), 5000); // the host's own timer
    const QString error = answer(b, 5)->error;
    QVERIFY2(error.contains(QLatin1String("'never' not set in time")), qPrintable(error));
    QCOMPARE(host.waiting(), std::size_t(0));
}

void TestRendezvousHost::malformedRequestsAreRefused()
{
    net::RendezvousHost host;
    FakeMemberLink a;
    host.request(0, a, frame(net::Message::StoreGet, {}, 1)); // no key
    host.request(0, a, frame(QStringLiteral("store_list"), {}, 2));
    host.request(0, a, set(QString(net::StoreRequest::kMaxKeyChars + 1, QLatin1Char('k')), "v", 3));
    for (const qint64 r : {1, 2, 3}) {
        QVERIFY(answer(a, r).has_value());
        QVERIFY2(answer(a, r)->error.startsWith(QLatin1String("store request:")),
                 qPrintable(answer(a, r)->error));
    }
    QCOMPARE(host.size(), std::size_t(0));
}

void TestRendezvousHost::aForgottenMemberIsNotAnswered()
{
    net::RendezvousHost host;
    FakeMemberLink a(QStringLiteral("a"));
    auto b = std::make_unique<FakeMemberLink>(QStringLiteral("b"));
    host.request(1, *b, get(QStringLiteral("k"), 1));
    host.request(0, a, get(QStringLiteral("k"), 9));
    host.forget(1);
    b.reset(); // its link is gone: the host must not touch it
    QCOMPARE(host.waiting(), std::size_t(1));
    host.request(0, a, set(QStringLiteral("k"), "v", 2));
    QCOMPARE(answer(a, 9)->value, std::optional<QByteArray>("v"));
    QCOMPARE(host.waiting(), std::size_t(0));
}

void TestRendezvousHost::aNewGenerationDropsTheOlderKeys()
{
    net::RendezvousHost host;
    FakeMemberLink a;
    host.request(0, a, set(QStringLiteral("gen-0/rank-0"), "old", 1));
    host.request(0, a, set(QStringLiteral("gen-1/rank-0"), "new", 2));
    host.request(0, a, set(QStringLiteral("gen-10/rank-0"), "newer", 3));
    host.beginGeneration(1);
    QVERIFY(!host.contains(QStringLiteral("gen-0/rank-0")));
    QVERIFY(host.contains(QStringLiteral("gen-1/rank-0")));
    QVERIFY(!host.contains(QStringLiteral("gen-10/rank-0"))); // "gen-1/" is not its prefix
}

void TestRendezvousHost::exchangeProbesNeedAHost()
{
    net::RendezvousHost host;
    FakeMemberLink a;
    host.exchangeProbe(0, a, exchangeProbe(QStringLiteral("pair-exchange-a"), 1),
                       QStringLiteral("a"));
    QCOMPARE(a.replyTo<net::ExchangeProbeReply>(1)->error,
             QStringLiteral("this coordinator hosts no exchange probe"));
    host.hostExchangeProbes(std::chrono::milliseconds(500));
    QVERIFY(host.hostsExchangeProbes());
    host.exchangeProbe(0, a, exchangeProbe(QStringLiteral("not-a-probe"), 2), QStringLiteral("a"));
    QVERIFY(!a.replyTo<net::ExchangeProbeReply>(2)->error.isEmpty()); // not a probe's prefix
    host.exchangeProbe(0, a, frame(net::Message::ExchangeProbe, {}, 3), QStringLiteral("a"));
    QVERIFY(!a.replyTo<net::ExchangeProbeReply>(3)->error.isEmpty()); // malformed
}

void TestRendezvousHost::ranksFormAGroupThroughIt_data()
{
    QTest::addColumn<int>("ranks");
    QTest::newRow("2 ranks") << 2;
    QTest::newRow("3 ranks") << 3;
}

void TestRendezvousHost::ranksFormAGroupThroughIt()
{
    // Each rank is a thread with its own JobLink, as a node's worker is: its requests are
    // queued to this thread, where the host answers them through the rank's link.
    QFETCH(int, ranks);
    net::RendezvousHost host;
    host.start();
    std::vector<std::unique_ptr<FakeMemberLink>> links;
    std::vector<std::unique_ptr<net::JobLink>> jobLinks;
    for (int r = 0; r < ranks; ++r) {
        links.push_back(std::make_unique<FakeMemberLink>(QStringLiteral("rank-%1").arg(r)));
        FakeMemberLink *link = links.back().get();
        jobLinks.push_back(std::make_unique<net::JobLink>(
            [this, &host, r, link](const QString &type, const QCborMap &body) {
                QMetaObject::invokeMethod(
                    this,
                    [&host, r, link, type, body] {
                        host.request(r, *link, net::Frame{0, type, body, true});
                    },
                    Qt::QueuedConnection);
            }));
        net::JobLink *jobLink = jobLinks.back().get();
        link->onSend = [jobLink](const QString &, const QCborMap &body) { jobLink->deliver(body); };
    }
    std::vector<std::future<std::vector<float>>> done;
    for (int r = 0; r < ranks; ++r)
        done.push_back(std::async(std::launch::async, [&, r] {
            try {
                net::RemoteStore store(*jobLinks[std::size_t(r)], std::chrono::seconds(20));
                net::GroupOptions options;
                options.rank = r;
                options.size = ranks;
                options.prefix = "gen-0";
                options.timeout = std::chrono::seconds(20);
                net::CollectiveGroup group(store, options);
                std::vector<float> data{float(r + 1), 10.0f * float(r)};
                group.allreduceSum(data.data(), data.size());
                return data;
            } catch (const std::exception &e) {
                qWarning("rank %d: %s", r, e.what());
                return std::vector<float>{};
            }
        }));
    auto finished = [&] {
        return std::all_of(done.begin(), done.end(), [](const auto &f) {
            return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        });
    };
    QTRY_VERIFY_WITH_TIMEOUT(finished(), 60000);
    float sum = 0, tens = 0;
    for (int r = 0; r < ranks; ++r) {
        sum += float(r + 1);
        tens += 10.0f * float(r);
    }
    for (auto &f : done)
        QCOMPARE(f.get(), (std::vector<float>{sum, tens}));
    QVERIFY(host.size() > 0); // the ranks' addresses went through the store
    QCOMPARE(host.waiting(), std::size_t(0));
    host.beginGeneration(1);
    QCOMPARE(host.size(), std::size_t(0));
}

QTEST_GUILESS_MAIN(TestRendezvousHost)
#include "tst_rendezvoushost.moc"
