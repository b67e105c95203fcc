// The frame codec: round trips, streams cut anywhere, and every kind of bad input refused with
// a message, never a crash or a read past the buffer.

#include "net/protocol/controlchannel.h"
#include "net/protocol/frame.h"
#include "net/protocol/messages/storerequest.h"
#include "net/protocol/protocol.h"
#include "net/protocol/sourcelimiter.h"

#include <QCborArray>
#include <QCborValue>
#include <QRandomGenerator>
#include <QTest>
#include <QtEndian>

using namespace edgetrain::net;

namespace {
Frame sample(std::uint64_t seq = 0)
{
    Frame f;
    f.sequence = seq;
    f.type = QStringLiteral("metrics");
    f.body = QCborMap{{QStringLiteral("cpu_percent"), 12.5},
                      {QStringLiteral("name"), QStringLiteral("pi-3")},
                      {QStringLiteral("blob"), QByteArray(1000, 'x')}};
    return f;
}

QByteArray header(quint32 length, char version = 1, char flags = 0)
{
    QByteArray h("ET");
    h.append(version).append(flags);
    char len[4];
    qToBigEndian(length, len);
    return h.append(len, 4);
}
} // namespace

class TestFrame : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip_data();
    void roundTrip();
    void byteByByte();
    void refusals_data();
    void refusals();
    void alteredAuthenticatedFrame();
    void handshakeProofs();
    void hmacIsRfc4231();
    void randomGarbageNeverCrashes();
    void sourceLimiterBoundsAnswers();
    void storeRequestsAreChecked();
};

void TestFrame::roundTrip_data()
{
    QTest::addColumn<bool>("authenticated");
    QTest::newRow("plain") << false;
    QTest::newRow("authenticated") << true;
}

void TestFrame::roundTrip()
{
    QFETCH(bool, authenticated);
    const QByteArray key = authenticated ? QByteArray("session-key") : QByteArray();
    const Frame f = sample(authenticated ? 7 : 0);
    FrameDecoder d;
    d.setSessionKey(key);
    d.feed(f.encode(key) + f.encode(key));
    for (int i = 0; i < 2; ++i) {
        const auto g = d.next();
        QVERIFY(g);
        QCOMPARE(g->type, f.type);
        QCOMPARE(g->sequence, f.sequence);
        QCOMPARE(g->body, f.body);
        QCOMPARE(g->authenticated, authenticated);
    }
    QVERIFY(!d.next());
    QVERIFY(!d.failed());
}

void TestFrame::byteByByte()
{
    const QByteArray bytes = sample().encode();
    FrameDecoder d;
    for (qsizetype i = 0; i + 1 < bytes.size(); ++i) {
        d.feed(bytes.mid(i, 1));
        QVERIFY(!d.next()); // a truncated frame is simply not complete yet
    }
    d.feed(bytes.right(1));
    QVERIFY(d.next());
    QCOMPARE(d.offset(), std::int64_t(bytes.size()));
}

void TestFrame::refusals_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("message");
    QTest::newRow("garbage") << QByteArray("GET / HTTP/1.1\r\n\r\n") << "bad magic";
    QTest::newRow("one wrong byte") << QByteArray("X") << "bad magic";
    QTest::newRow("future version") << header(4, 9) + QByteArray(4, 0) << "protocol version 9";
    QTest::newRow("unknown flags")
        << header(4, 1, 0x40) + QByteArray(4, 0) << "unknown frame flags";
    QTest::newRow("oversized") << header(100u << 20) << "exceeds the limit";
    const QByteArray junk("\xff\xff\xff\xff", 4);
    QTest::newRow("undecodable payload") << header(4) + junk << "undecodable frame payload";
    const QByteArray notArray = QCborValue(QCborMap{{QStringLiteral("a"), 1}}).toCbor();
    QTest::newRow("payload shape")
        << header(quint32(notArray.size())) + notArray << "not [sequence, type, body]";
    QTest::newRow("authenticated before handshake")
        << header(3, 1, Frame::kAuthenticated) + QByteArray(3 + 32, 0) << "before the handshake";
}

void TestFrame::refusals()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, message);
    FrameDecoder d(1u << 20);
    d.feed(bytes);
    QVERIFY(!d.next());
    QVERIFY(d.failed());
    QVERIFY2(d.error().contains(message), qPrintable(d.error()));
    d.feed(sample().encode()); // a failed stream stays failed
    QVERIFY(!d.next());
}

void TestFrame::alteredAuthenticatedFrame()
{
    QByteArray bytes = sample(1).encode("k1");
    bytes[20] = char(bytes[20] ^ 0x01);
    FrameDecoder d;
    d.setSessionKey("k1");
    d.feed(bytes);
    QVERIFY(!d.next());
    QVERIFY(d.error().contains(QLatin1String("authentication failed")));

    FrameDecoder other; // right bytes, wrong key
    other.setSessionKey("k2");
    other.feed(sample(1).encode("k1"));
    QVERIFY(!other.next());
    QVERIFY(other.failed());

    FrameDecoder afterHandshake; // a plain frame once a key is set
    afterHandshake.setSessionKey("k1");
    afterHandshake.feed(sample().encode());
    QVERIFY(!afterHandshake.next());
    QVERIFY(afterHandshake.error().contains(
        QLatin1String("unauthenticated frame after the handshake")));
}

void TestFrame::handshakeProofs()
{
    const QByteArray key("cluster"), nc = randomBytes(32), ns = randomBytes(32);
    QVERIFY(Handshake::serverProof(key, nc, ns) != Handshake::clientProof(key, nc, ns));
    QVERIFY(Handshake::clientProof(key, nc, ns) != Handshake::clientProof("other", nc, ns));
    QVERIFY(Handshake::sessionKey(key, nc, ns) != Handshake::sessionKey(key, nc, randomBytes(32)));
    QCOMPARE(Handshake::sessionKey(key, nc, ns).size(), 32);
    QVERIFY(constantTimeEquals("abc", "abc"));
    QVERIFY(!constantTimeEquals("abc", "abd"));
    QVERIFY(!constantTimeEquals("abc", "ab"));
}

void TestFrame::hmacIsRfc4231()
{
    // The MAC on the wire is HMAC-SHA256 whatever computes it (nodes of an older release, which
    // computed it with Qt, still talk to this one): RFC 4231's test cases 1, 2 and 6 (a key
    // longer than the block).
    QCOMPARE(hmacSha256(QByteArray(20, '\x0b'), "Hi There").toHex(),
             QByteArray("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    QCOMPARE(hmacSha256("Jefe", "what do ya want for nothing?").toHex(),
             QByteArray("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    QCOMPARE(hmacSha256(QByteArray(131, '\xaa'),
                        "Test Using Larger Than Block-Size Key - Hash Key First")
                 .toHex(),
             QByteArray("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    // A frame's MAC is the HMAC of its header and payload, the last 32 bytes of the frame.
    const QByteArray bytes = sample(3).encode("session");
    QCOMPARE(bytes.right(Frame::kMacBytes),
             hmacSha256("session", bytes.left(bytes.size() - Frame::kMacBytes)));
}

void TestFrame::randomGarbageNeverCrashes()
{
    // What a peer on the wire can do to us: flip bytes and cut the stream anywhere. Seeded, so a
    // failure names a trial that can be replayed.
    QRandomGenerator rng(20261123);
    int refused = 0, waiting = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        const bool keyed = trial % 2;
        const Frame original = sample(std::uint64_t(trial % 3));
        const QByteArray clean = original.encode(keyed ? QByteArray("k") : QByteArray());
        QByteArray bytes = clean;
        const int flips = 1 + int(rng.bounded(8));
        for (int i = 0; i < flips; ++i)
            bytes[qsizetype(rng.bounded(int(bytes.size())))] = char(rng.bounded(256));
        if (trial % 4 < 2) // half the streams are also cut short
            bytes.truncate(qsizetype(rng.bounded(int(bytes.size()) + 1)));
        FrameDecoder d(1u << 16);
        if (keyed)
            d.setSessionKey("k");
        d.feed(bytes);
        int frames = 0;
        while (const auto f = d.next()) {
            ++frames;
            QVERIFY2(frames == 1,
                     qPrintable(QStringLiteral("trial %1: a second frame").arg(trial)));
            // An authenticated frame that decodes is the one that was sent: a changed byte
            // never gets through the MAC.
            if (keyed) {
                QVERIFY2(f->authenticated, qPrintable(QStringLiteral("trial %1").arg(trial)));
                QCOMPARE(f->body, original.body);
                QCOMPARE(f->sequence, original.sequence);
            }
        }
        if (d.failed()) {
            ++refused;
            // The message says where in the stream, and a failed decoder stays failed.
            QVERIFY(!d.error().isEmpty());
            QVERIFY(d.offset() <= bytes.size());
            d.feed(clean);
            QVERIFY2(!d.next(),
                     qPrintable(QStringLiteral("trial %1: decoded after an error").arg(trial)));
        } else if (frames == 0) {
            ++waiting; // a cut stream: waits for the rest, which a clean prefix is
        }
        // A stream cut inside an intact prefix is never an error, only incomplete.
        if (clean.startsWith(bytes) && bytes.size() < clean.size())
            QVERIFY2(!d.failed() && frames == 0,
                     qPrintable(QStringLiteral("trial %1: a clean prefix was refused").arg(trial)));
    }
    // Both outcomes happen (the trials exercise the decoder, not one early exit).
    qInfo("refused %d, waiting %d of 2000", refused, waiting);
    QVERIFY(refused > 500);
    QVERIFY(waiting > 50);
}

QTEST_APPLESS_MAIN(TestFrame)
void TestFrame::sourceLimiterBoundsAnswers()
{
    using namespace std::chrono_literals;
    SourceLimiter::Options o;
    o.per_second = 5;
    o.burst = 10;
    o.total_per_second = 12;
    o.sources = 3;
    SourceLimiter l(o);
    const auto t0 = SourceLimiter::Clock::now();
    int a = 0;
    for (int i = 0; i < 50; ++i) // one address at once: its burst
        a += l.allow("a", t0) ? 1 : 0;
    QCOMPARE(a, 10);
    a = 0;
    for (int i = 0; i < 50; ++i) // a second later: what it earned in that second
        a += l.allow("a", t0 + 1s) ? 1 : 0;
    QCOMPARE(a, 5);
    // Everyone together: the total's bucket (12 a second, at most 12 at once: 12 - 5 left).
    int b = 0;
    for (int i = 0; i < 50; ++i)
        b += l.allow("b", t0 + 1s) ? 1 : 0;
    QCOMPARE(b, 7);
    // A fourth address replaces the one heard from longest ago: the table stays at 3.
    QVERIFY(!l.allow("c", t0 + 1s)); // the total is spent
    QVERIFY(l.allow("d", t0 + 2s));
    QCOMPARE(l.trackedSources(), std::size_t(3));
    for (int i = 0; i < 100; ++i)
        (void)l.allow("spoofed-" + std::to_string(i), t0 + 3s);
    QCOMPARE(l.trackedSources(), std::size_t(3));
}

void TestFrame::storeRequestsAreChecked()
{
    // What a node asks the coordinator's rendezvous store, read field by field: a good request
    // of each kind, then each bound.
    QString error;
    const auto set =
        StoreRequest::fromCbor(Message::StoreSet,
                               QCborMap{{QStringLiteral("request"), 7},
                                        {QStringLiteral("key"), QStringLiteral("rank_0")},
                                        {QStringLiteral("value"), QByteArray("10.0.0.2:4000")}},
                               &error);
    QVERIFY2(set, qPrintable(error));
    QCOMPARE(set->kind, StoreRequest::Kind::Set);
    QCOMPARE(set->request, qint64(7));
    QCOMPARE(set->keys, QStringList{QStringLiteral("rank_0")});
    QCOMPARE(set->value, QByteArray("10.0.0.2:4000"));
    const auto wait = StoreRequest::fromCbor(
        Message::StoreWait,
        QCborMap{{QStringLiteral("keys"),
                  QCborArray{QStringLiteral("rank_0"), QStringLiteral("rank_1")}},
                 {QStringLiteral("timeout_ms"), 5}},
        &error);
    QVERIFY2(wait, qPrintable(error));
    QCOMPARE(wait->keys.size(), 2);
    QCOMPARE(wait->timeout_ms, qint64(100)); // clamped up
    QCOMPARE(StoreRequest::fromCbor(Message::StoreGet,
                                    QCborMap{{QStringLiteral("key"), QStringLiteral("k")}}, &error)
                 ->timeout_ms,
             qint64(10000)); // the default

    const auto refused = [&](const QString &type, const QCborMap &body, const char *says) {
        QString why;
        qint64 request = 0;
        const bool ok = !StoreRequest::fromCbor(type, body, &why, &request) &&
                        why.contains(QLatin1String(says)) && request == 9;
        if (!ok)
            qWarning("%s: '%s'", says, qPrintable(why));
        return ok;
    };
    const QCborValue id(9);
    QVERIFY(
        refused(QStringLiteral("store_drop"), {{QStringLiteral("request"), id}}, "unknown type"));
    QVERIFY(refused(Message::StoreGet, {{QStringLiteral("request"), id}}, "not text"));
    QVERIFY(refused(Message::StoreGet,
                    {{QStringLiteral("request"), id}, {QStringLiteral("key"), QString()}},
                    "a key of 0 characters"));
    QVERIFY(refused(Message::StoreGet,
                    {{QStringLiteral("request"), id},
                     {QStringLiteral("key"), QString(StoreRequest::kMaxKeyChars + 1, u'k')}},
                    "a key of 513 characters"));
    QVERIFY(refused(Message::StoreSet,
                    {{QStringLiteral("request"), id},
                     {QStringLiteral("key"), QStringLiteral("k")},
                     {QStringLiteral("value"), QStringLiteral("text")}},
                    "'value' is not bytes"));
    QVERIFY(refused(Message::StoreSet,
                    {{QStringLiteral("request"), id},
                     {QStringLiteral("key"), QStringLiteral("k")},
                     {QStringLiteral("value"), QByteArray(StoreRequest::kMaxValueBytes + 1, 'v')}},
                    "a value of 1048577 bytes"));
    QCborArray many;
    for (int i = 0; i <= StoreRequest::kMaxKeys; ++i)
        many.append(QStringLiteral("k%1").arg(i));
    QVERIFY(refused(Message::StoreWait,
                    {{QStringLiteral("request"), id}, {QStringLiteral("keys"), many}},
                    "1025 keys"));
    QVERIFY(refused(Message::StoreWait,
                    {{QStringLiteral("request"), id},
                     {QStringLiteral("keys"), QCborArray{QStringLiteral("a"), 3}}},
                    "a key is not text"));
    QVERIFY(refused(Message::StoreWait, {{QStringLiteral("request"), id}}, "'keys' is not a list"));
}

#include "tst_frame.moc"
