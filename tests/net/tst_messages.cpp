// The message bodies (net/protocol/messages): each struct reads back what it wrote, and a body
// from another process that lacks a field or holds one of the wrong type is refused with the
// message's and the field's name, never read as garbage.

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/handshake.h"
#include "net/protocol/messages/jobspec.h"
#include "net/protocol/messages/nodeinfo.h"
#include "net/protocol/messages/profilereport.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/messages/shipmentchunk.h"
#include "net/protocol/messages/storerequest.h"
#include "net/protocol/messages/systemsample.h"
#include "net/protocol/messages/trainingstatus.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"

#include <QCborArray>
#include <QTest>

#include <cmath>
#include <functional>
#include <limits>

using namespace edgetrain::net;

Q_DECLARE_METATYPE(std::function<QString(const QCborMap &)>)

namespace {

using Reader = std::function<QString(const QCborMap &)>;

/** A reader that returns the error of T::fromCbor(map, &error), or "" when it read. */
template <typename T> Reader refusalOf()
{
    return [](const QCborMap &map) {
        QString error;
        const auto value = T::fromCbor(map, &error);
        return value ? QString() : error;
    };
}

/** `map` with `key` set to `value` (or removed, for an undefined value). */
QCborMap with(QCborMap map, const QString &key, const QCborValue &value)
{
    if (value.isUndefined())
        map.remove(key);
    else
        map.insert(key, value);
    return map;
}

template <typename T> T readBack(const T &value)
{
    QString error;
    const auto back = T::fromCbor(value.toCbor(), &error);
    if (!back)
        qFatal("%s", qPrintable(error));
    return *back;
}

ProfileReport sampleProfile()
{
    ProfileReport p;
    p.small_batch = 4;
    p.large_batch = 32;
    p.small_step_seconds = 0.01;
    p.large_step_seconds = 0.05;
    p.update_seconds = 0.002;
    p.eval_seconds_per_sample = 1e-4;
    p.max_local_batch = 512;
    p.steps = 3;
    p.seconds = 1.5;
    p.idle_watts = 2.5;
    p.busy_watts = 6.0;
    p.power_source = QStringLiteral("estimated: pi4");
    p.addPhase(QStringLiteral("steps"), 0.5);
    p.addPhase(QStringLiteral("link"), 0.25);
    p.addPhase(QStringLiteral("steps"), 0.5); // a phase that comes again sums
    LinkFigures link;
    link.rtt_seconds = 0.001;
    link.seconds = 0.3;
    link.rates_timed = true;
    link.up_bytes_per_second = 1e7;
    link.down_bytes_per_second = 2e7;
    link.up_busy_seconds_per_byte = 1e-9;
    link.down_busy_seconds_per_byte = 2e-9;
    p.link = link;
    p.exchange.timed = true;
    p.exchange.seconds_per_byte = 3e-9;
    p.exchange.over = ExchangeFigures::Over::Link;
    p.exchange.bytes = 1 << 20;
    p.exchange.repeats = 7;
    p.exchange.seconds = 0.4;
    p.exchange.setup_seconds = 0.1;
    p.exchange.windows_seconds = 0.3;
    p.exchange.busy_seconds_per_byte = 1.5e-9;
    return p;
}

JobReady sampleReady()
{
    JobReady r;
    r.images_per_second = 812.5;
    r.train_samples = 60000;
    r.test_samples = 10000;
    r.parameters = 61706;
    r.gradient_floats = 61706;
    r.averaged_floats = 61710;
    r.buffer_floats = 4;
    r.profile = sampleProfile();
    return r;
}

EpochDone sampleDone()
{
    EpochDone d;
    d.epoch = 3;
    d.loss_sum = 1234.5;
    d.correct = 5000;
    d.seen = 6000;
    d.targets = 6000;
    d.global = true;
    d.seconds = 12.25;
    d.compute_images_per_second = 480.0;
    d.held_fingerprint = QStringLiteral("a1b2c3");
    return d;
}

GroupSpec sampleGroup()
{
    return GroupSpec{2, 1, 3, {0.5, 0.25, 0.25}};
}

} // namespace

class TestMessages : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void workerMessagesRoundTrip();
    void coordinatorRepliesRoundTrip();
    void protocolBodiesRoundTrip();
    void jobSpecRoundTrip();
    void malformedBodiesAreRefused_data();
    void malformedBodiesAreRefused();
    void aDivergedRunsLossIsNews();
    void lenientReadingsFallBack();
    void aJobReadyFromAnyNodeReads();
    void requestIds();
};

void TestMessages::workerMessagesRoundTrip()
{
    const JobReady ready = sampleReady();
    QCOMPARE(readBack(ready), ready);
    QCOMPARE(readBack(ready).profile.phases_seconds.size(), std::size_t(2));
    QCOMPARE(readBack(ready).profile.phases_seconds.front().second, 1.0);
    // A profile without a link probe, whose exchange could not be timed.
    JobReady plain = ready;
    plain.profile.link.reset();
    plain.profile.exchange = ExchangeFigures();
    plain.profile.exchange.error = QStringLiteral("no thread to be had");
    plain.profile.exchange.link_error = QStringLiteral("refused");
    QCOMPARE(readBack(plain), plain);
    LinkFigures failed;
    failed.error = QStringLiteral("connection refused");
    plain.profile.link = failed;
    QCOMPARE(readBack(plain), plain);

    QCOMPARE(readBack(sampleDone()), sampleDone());
    EpochDone local = sampleDone();
    local.global = false;
    local.held_fingerprint.clear();
    QCOMPARE(readBack(local), local);
    QVERIFY(!local.toCbor().contains(QStringLiteral("held_fingerprint")));

    QCOMPARE(readBack(EpochEval{4, 12.5, 90, 100}), (EpochEval{4, 12.5, 90, 100}));

    GradientPush compressed;
    compressed.version = 41;
    compressed.lr = 0.05;
    compressed.count = 16;
    compressed.compressed = true;
    compressed.gradient_bf16 = QByteArray(20, 'g');
    compressed.buffers = QByteArray(8, 'b');
    QCOMPARE(readBack(compressed), compressed);
    GradientPush full = compressed;
    full.compressed = false;
    full.gradient_bf16.clear();
    full.buffers.clear();
    full.gradient = QByteArray(48, 'f');
    QCOMPARE(readBack(full), full);

    QCOMPARE(readBack(ExchangeProbeRequest{QStringLiteral("xprobe-1"), 4096}),
             (ExchangeProbeRequest{QStringLiteral("xprobe-1"), 4096}));
    const WeightsChunk chunk{1, 3, 7, QByteArray(100, 'w')};
    QCOMPARE(readBack(chunk), chunk);
    QCOMPARE(readBack(CollectiveFailed{812, QStringLiteral("peer gone")}),
             (CollectiveFailed{812, QStringLiteral("peer gone")}));
    const JobDone done{true, 1200, 2, QStringLiteral("f00d")};
    QCOMPARE(readBack(done), done);
    QCOMPARE(Failure::fromCbor(Failure{QStringLiteral("out of memory")}.toCbor()).message,
             QStringLiteral("out of memory"));
    QCOMPARE(Receipt::fromCbor(Receipt{QStringLiteral("job-7")}.toCbor()).id,
             QStringLiteral("job-7"));
}

void TestMessages::coordinatorRepliesRoundTrip()
{
    for (ReplyAction a :
         {ReplyAction::Start, ReplyAction::Continue, ReplyAction::Evaluate, ReplyAction::Regroup,
          ReplyAction::Stop, ReplyAction::Finish, ReplyAction::More}) {
        QCOMPARE(parseAction(actionName(a)), std::optional<ReplyAction>(a));
        TrainingReply bare;
        bare.action = a;
        QCOMPARE(readBack(bare), bare);
    }
    QVERIFY(!parseAction(QStringLiteral("dance")));

    TrainingReply start;
    start.action = ReplyAction::Start;
    start.group = sampleGroup();
    start.epoch = 2;
    QCOMPARE(readBack(start), start);
    TrainingReply evaluate;
    evaluate.action = ReplyAction::Evaluate;
    evaluate.test_part = std::make_pair(std::int64_t(100), std::int64_t(250));
    evaluate.weights = QByteArray(16, 'w');
    QCOMPARE(readBack(evaluate), evaluate);
    TrainingReply next;
    next.next_group = sampleGroup();
    next.send_weights = 3;
    QCOMPARE(readBack(next), next);
    TrainingReply more;
    more.action = ReplyAction::More;
    more.ranges = {{0, 10}, {500, 32}};
    QCOMPARE(readBack(more), more);

    const WeightsReply stop{true, 0, false, {}};
    QCOMPARE(readBack(stop), stop);
    // A parameter server's stop is the same body as the coordinator's: {action: stop}.
    TrainingReply stopReply;
    stopReply.action = ReplyAction::Stop;
    QCOMPARE(stop.toCbor(), stopReply.toCbor());
    const WeightsReply whole{false, 12, false, QByteArray(32, 'x')};
    QCOMPARE(readBack(whole), whole);
    const WeightsReply delta{false, 13, true, QByteArray(16, 'd')};
    QCOMPARE(readBack(delta), delta);

    QVERIFY(ExchangeProbeReply{}.toCbor().isEmpty());
    QCOMPARE(ExchangeProbeReply::fromCbor(ExchangeProbeReply{QStringLiteral("busy")}.toCbor()),
             ExchangeProbeReply{QStringLiteral("busy")});
}

void TestMessages::protocolBodiesRoundTrip()
{
    const Hello hello{QByteArray(32, 'n'), 1};
    QCOMPARE(Hello::fromCbor(hello.toCbor()), hello);
    const Challenge challenge{QByteArray(32, 'c'), QByteArray(32, 'p')};
    QCOMPARE(Challenge::fromCbor(challenge.toCbor()), challenge);
    QCOMPARE(Auth::fromCbor(Auth{QByteArray(32, 'a')}.toCbor()), Auth{QByteArray(32, 'a')});
    QCOMPARE(Refused::fromCbor(Refused{QStringLiteral("no key")}.toCbor()).reason,
             QStringLiteral("no key"));
    const QCborMap probe = ProbeDatagram{1}.toCbor(1200);
    QVERIFY(ProbeDatagram::isProbe(probe));
    QVERIFY(QCborValue(probe).toCbor().size() >= 1200);
    NodeInfo beacon;
    beacon.id = QStringLiteral("n1");
    beacon.control_port = 4242;
    QVERIFY(!ProbeDatagram::isProbe(beacon.toCbor())); // a beacon is not a probe

    SystemSample s;
    s.cpu_percent = 42.5;
    s.memory_total_bytes = 1 << 30;
    s.cpu_mhz = 1500.0;
    s.power_watts = 4.2;
    s.power_source = QStringLiteral("rapl");
    TrainingStatus t;
    t.active = true;
    t.job = QStringLiteral("job-1");
    t.phase = TrainingPhase::Training;
    t.epoch = 2;
    t.rank = 1;
    s.training = t;
    const SystemSample back = SystemSample::fromCbor(s.toCbor());
    QCOMPARE(back.cpu_percent, 42.5);
    QCOMPARE(back.cpu_mhz, std::optional<double>(1500.0));
    QVERIFY(!back.temperature_c);
    QCOMPARE(back.power_source, QStringLiteral("rapl"));
    QVERIFY(back.training);
    const TrainingStatus &tb = *back.training;
    QCOMPARE(tb.job, t.job);
    QCOMPARE(tb.phase, t.phase);
    QCOMPARE(tb.epoch, 2);
    QCOMPARE(tb.rank, 1);
    QVERIFY(!SystemSample::fromCbor(SystemSample().toCbor()).training); // an idle node

    ShipmentChunk chunk;
    chunk.id = QStringLiteral("s1");
    chunk.index = 0;
    chunk.total = 2;
    chunk.data = QByteArray(10, 'd');
    chunk.sha256 = QByteArray(32, 's');
    ShipmentHeader header;
    header.description = QStringLiteral("crops");
    header.shape = {3, 8, 8};
    header.classes = 2;
    header.label_width = 11;
    header.samples = 40;
    header.bytes = 20;
    header.encoding = QStringLiteral("palette8");
    header.palette = QByteArray(8, 'p');
    chunk.header = header;
    QCOMPARE(ShipmentChunk::fromCbor(chunk.toCbor()), chunk);

    StoreRequest set;
    set.kind = StoreRequest::Kind::Set;
    set.keys = QStringList{QStringLiteral("gen-0/rank-1")};
    set.value = QByteArray("addr");
    set.timeout_ms = 5000;
    QCborMap body = set.toCbor();
    RequestId::set(body, 9);
    QString error;
    const auto readSet = StoreRequest::fromCbor(set.messageType(), body, &error);
    QVERIFY2(readSet, qPrintable(error));
    QCOMPARE(readSet->kind, StoreRequest::Kind::Set);
    QCOMPARE(readSet->keys, set.keys);
    QCOMPARE(readSet->value, set.value);
    QCOMPARE(readSet->request, qint64(9));
    StoreRequest wait;
    wait.kind = StoreRequest::Kind::Wait;
    wait.keys = QStringList{QStringLiteral("a"), QStringLiteral("b")};
    wait.timeout_ms = 2500;
    QCOMPARE(wait.messageType(), Message::StoreWait);
    const auto readWait = StoreRequest::fromCbor(wait.messageType(), wait.toCbor(), &error);
    QVERIFY2(readWait, qPrintable(error));
    QCOMPARE(readWait->keys, wait.keys);
    QCOMPARE(readWait->timeout_ms, qint64(2500));
    const StoreReply got{{}, QByteArray("v")};
    QCOMPARE(StoreReply::fromCbor(got.toCbor()), got);
    QCOMPARE(StoreReply::fromCbor(StoreReply{}.toCbor()), StoreReply{});
}

void TestMessages::jobSpecRoundTrip()
{
    JobSpec j;
    j.id = QStringLiteral("job-3");
    j.mode = TrainingMode::Async;
    j.model = edgetrain::core::Json::parse(
        R"({"name": "tiny", "input": [3], "stages": [{"type": "linear", "out_features": 2}]})");
    j.seed = 7;
    j.epochs = 4;
    j.pipelined = true;
    j.link_probe_port = 5000;
    j.link_probe_token = QStringLiteral("tok");
    j.exchange_probe = true;
    j.link_rates = false;
    j.dataset = QStringLiteral("shipped");
    j.train_shipment = QStringLiteral("train-1");
    QString error;
    const auto back = JobSpec::fromCbor(j.toCbor(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->toCbor(), j.toCbor());
    QCOMPARE(JobSpec::idOf(j.toCbor()), j.id);
    const auto g = GroupSpec::fromCbor(sampleGroup().toCbor(), &error);
    QVERIFY2(g, qPrintable(error));
    QCOMPARE(*g, sampleGroup());
}

void TestMessages::malformedBodiesAreRefused_data()
{
    QTest::addColumn<Reader>("read");
    QTest::addColumn<QCborMap>("body");
    QTest::addColumn<QString>("refusal");

    const QCborMap ready = sampleReady().toCbor();
    QTest::newRow("job_ready without its samples")
        << refusalOf<JobReady>() << with(ready, QStringLiteral("train_samples"), {})
        << QStringLiteral("job_ready: field \"train_samples\" must be an integer");
    QTest::newRow("job_ready's speed as text")
        << refusalOf<JobReady>()
        << with(ready, QStringLiteral("images_per_second"), QStringLiteral("fast"))
        << QStringLiteral("job_ready: field \"images_per_second\" must be a number");
    QCborMap profile = sampleProfile().toCbor();
    profile.insert(QStringLiteral("batches"), QCborArray{4});
    QTest::newRow("a profile with one batch size")
        << refusalOf<JobReady>() << with(ready, QStringLiteral("profile"), profile)
        << QStringLiteral("job_ready: profile: field \"batches\" must be a list of two integers");
    QCborMap link = sampleProfile().link->toCbor();
    link.insert(QStringLiteral("rtt_seconds"), QStringLiteral("soon"));
    QTest::newRow("a link figure as text")
        << refusalOf<JobReady>()
        << with(ready, QStringLiteral("profile"),
                with(sampleProfile().toCbor(), QStringLiteral("link"), link))
        << QStringLiteral("job_ready: profile's link: field \"rtt_seconds\" must be a number");

    const QCborMap done = sampleDone().toCbor();
    QTest::newRow("epoch_done without its epoch")
        << refusalOf<EpochDone>() << with(done, QStringLiteral("epoch"), {})
        << QStringLiteral("epoch_done: field \"epoch\" must be an integer");
    QTest::newRow("epoch_done's global as a number")
        << refusalOf<EpochDone>() << with(done, QStringLiteral("global"), 1)
        << QStringLiteral("epoch_done: field \"global\" must be true or false");
    QTest::newRow("epoch_done's fingerprint as bytes")
        << refusalOf<EpochDone>() << with(done, QStringLiteral("held_fingerprint"), QByteArray("x"))
        << QStringLiteral("epoch_done: field \"held_fingerprint\" must be a string");
    QTest::newRow("epoch_eval with a negative count")
        << refusalOf<EpochEval>()
        << with(EpochEval{1, 0.5, 1, 2}.toCbor(), QStringLiteral("count"), -3)
        << QStringLiteral("epoch_eval: field \"count\" must be an integer from 0");

    GradientPush push;
    push.compressed = true;
    push.gradient_bf16 = QByteArray(4, 'g');
    QTest::newRow("ps_push's gradients as text")
        << refusalOf<GradientPush>()
        << with(push.toCbor(), QStringLiteral("gradient_bf16"), QStringLiteral("g"))
        << QStringLiteral("ps_push: field \"gradient_bf16\" must be bytes");
    QTest::newRow("ps_push without its version")
        << refusalOf<GradientPush>() << with(push.toCbor(), QStringLiteral("version"), {})
        << QStringLiteral("ps_push: field \"version\"");
    QTest::newRow("exchange_probe without floats")
        << refusalOf<ExchangeProbeRequest>()
        << with(ExchangeProbeRequest{QStringLiteral("p"), 8}.toCbor(), QStringLiteral("floats"), {})
        << QStringLiteral("exchange_probe: field \"floats\"");
    QTest::newRow("a weights chunk past its total")
        << refusalOf<WeightsChunk>() << WeightsChunk{3, 3, 0, QByteArray(4, 'w')}.toCbor()
        << QStringLiteral("weights: chunk 3 of 3");
    QTest::newRow("a weights chunk over 4 MiB")
        << refusalOf<WeightsChunk>()
        << WeightsChunk{0, 1, 0, QByteArray(WeightsChunk::kMaxBytes + 1, 'w')}.toCbor()
        << QStringLiteral("weights: field \"data\" must be at most");
    QTest::newRow("job_done's fingerprint as a number")
        << refusalOf<JobDone>()
        << with(JobDone{false, 1, 0, QStringLiteral("f")}.toCbor(), QStringLiteral("fingerprint"),
                7)
        << QStringLiteral("job_done: field \"fingerprint\" must be a string");
    QTest::newRow("collective_failed without its message")
        << refusalOf<CollectiveFailed>()
        << with(CollectiveFailed{1, QStringLiteral("m")}.toCbor(), QStringLiteral("message"), {})
        << QStringLiteral("collective_failed: field \"message\"");

    TrainingReply start;
    start.action = ReplyAction::Start;
    start.group = sampleGroup();
    QTest::newRow("a reply without an action")
        << refusalOf<TrainingReply>() << with(start.toCbor(), QStringLiteral("action"), {})
        << QStringLiteral("reply: field \"action\" must be a string");
    QTest::newRow("a reply with an unknown action")
        << refusalOf<TrainingReply>()
        << with(start.toCbor(), QStringLiteral("action"), QStringLiteral("dance"))
        << QStringLiteral("reply: field \"action\" must be start, continue, evaluate");
    QTest::newRow("a reply whose group is malformed")
        << refusalOf<TrainingReply>()
        << with(start.toCbor(), QStringLiteral("group"), GroupSpec{0, 3, 2, {0.5, 0.5}}.toCbor())
        << QStringLiteral("reply: its group: malformed group: rank 3 of 2");
    TrainingReply more;
    more.action = ReplyAction::More;
    QTest::newRow("a reply's range of one number")
        << refusalOf<TrainingReply>()
        << with(more.toCbor(), QStringLiteral("ranges"), QCborArray{QCborArray{5}})
        << QStringLiteral("reply: field \"ranges\" must be a list of [first, count] pairs");
    QTest::newRow("a weights reply without its weights")
        << refusalOf<WeightsReply>()
        << with(WeightsReply{false, 1, false, QByteArray(4, 'w')}.toCbor(),
                QStringLiteral("weights"), {})
        << QStringLiteral("weights reply: field \"weights\" must be bytes");
    QTest::newRow("a weights reply that says continue")
        << refusalOf<WeightsReply>()
        << QCborMap{{QStringLiteral("action"), QStringLiteral("continue")}}
        << QStringLiteral("weights reply: field \"action\" must be stop");

    JobSpec job;
    job.id = QStringLiteral("j");
    job.model = edgetrain::core::Json::parse(
        R"({"name": "tiny", "input": [3], "stages": [{"type": "linear", "out_features": 2}]})");
    QTest::newRow("a job whose epochs are text")
        << refusalOf<JobSpec>()
        << with(job.toCbor(), QStringLiteral("epochs"), QStringLiteral("ten"))
        << QStringLiteral("job: field \"epochs\" must be an integer from 1 to 100000");
    QTest::newRow("a job without nesterov")
        << refusalOf<JobSpec>() << with(job.toCbor(), QStringLiteral("nesterov"), {})
        << QStringLiteral("job: field \"nesterov\" must be true or false");
    QTest::newRow("a job in an unknown mode")
        << refusalOf<JobSpec>()
        << with(job.toCbor(), QStringLiteral("mode"), QStringLiteral("swarm"))
        << QStringLiteral("job: field \"mode\" must be sync, async or local-sgd, got swarm");
}

void TestMessages::malformedBodiesAreRefused()
{
    QFETCH(Reader, read);
    QFETCH(QCborMap, body);
    QFETCH(QString, refusal);
    const QString error = read(body);
    QVERIFY2(error.startsWith(refusal), qPrintable(QStringLiteral("refused with '%1'").arg(error)));
}

void TestMessages::aDivergedRunsLossIsNews()
{
    // A NaN loss is what the run did, not a malformed body: it reaches the coordinator as is.
    EpochDone d = sampleDone();
    d.loss_sum = std::numeric_limits<double>::quiet_NaN();
    QString error;
    const auto back = EpochDone::fromCbor(d.toCbor(), &error);
    QVERIFY2(back, qPrintable(error));
    QVERIFY(std::isnan(back->loss_sum));
}

void TestMessages::lenientReadingsFallBack()
{
    // Readings shown to the user: a field of the wrong type reads as its default.
    const TrainingStatus t = TrainingStatus::fromCbor(
        QCborMap{{QStringLiteral("epoch"), QStringLiteral("two")}, {QStringLiteral("rank"), 1.5}});
    QCOMPARE(t.epoch, 0);
    QCOMPARE(t.rank, -1);
    const SystemSample s =
        SystemSample::fromCbor(QCborMap{{QStringLiteral("agent_rss_bytes"), 1e30},
                                        {QStringLiteral("net_rx_bytes_per_second"), 10.0},
                                        {QStringLiteral("training"), QStringLiteral("busy")}});
    QCOMPARE(s.agent_rss_bytes, std::int64_t(0));
    QVERIFY(!s.training);
    // A node from before the agent's own counters: its interfaces' figures stand in.
    QCOMPARE(s.agent_rx_bytes_per_second, 10.0);
    // A chunk's missing numbers read as -1, which the assembler refuses by name.
    const ShipmentChunk c =
        ShipmentChunk::fromCbor(QCborMap{{QStringLiteral("index"), QStringLiteral("0")}});
    QCOMPARE(c.index, std::int64_t(-1));
    QCOMPARE(c.total, std::int64_t(-1));
    QVERIFY(!c.header);
    QCOMPARE(ShipmentHeader::fromCbor({}).label_width, std::int64_t(1));
}

void TestMessages::aJobReadyFromAnyNodeReads()
{
    // What the strict reader takes, the planner's lenient one reads the same.
    const JobReady ready = sampleReady();
    QCOMPARE(JobReady::fromCborLenient(ready.toCbor()), ready);
    JobReady plain = ready;
    plain.profile.link.reset();
    plain.profile.exchange = ExchangeFigures();
    plain.profile.exchange.error = QStringLiteral("no thread to be had");
    QCOMPARE(JobReady::fromCborLenient(plain.toCbor()), plain);
    LinkFigures failed;
    failed.error = QStringLiteral("connection refused");
    plain.profile.link = failed;
    QCOMPARE(JobReady::fromCborLenient(plain.toCbor()), plain);

    // A node from before the profile: refused by the strict reader, its figures kept by the
    // lenient one and every other field at its default (no batches timed, no power figures,
    // no link, nothing handed out to it).
    const QCborMap older{{QStringLiteral("images_per_second"), 250},
                         {QStringLiteral("train_samples"), 900},
                         {QStringLiteral("parameters"), 777}};
    QString error;
    QVERIFY(!JobReady::fromCbor(older, &error));
    const JobReady o = JobReady::fromCborLenient(older);
    QCOMPARE(o.images_per_second, 250.0);
    QCOMPARE(o.train_samples, std::int64_t(900));
    QCOMPARE(o.parameters, std::int64_t(777));
    QCOMPARE(o.gradient_floats, std::int64_t(0));
    QVERIFY(!o.takes_more && !o.evaluates_more);
    QCOMPARE(o.profile, ProfileReport());
    QCOMPARE(o.profile.large_batch, std::int64_t(0));
    QCOMPARE(o.profile.max_local_batch, std::int64_t(-1));
    QCOMPARE(o.profile.idle_watts, -1.0);
    QVERIFY(!o.profile.link);

    // Fields of the wrong type read as their defaults; an empty link is none.
    QCborMap odd = sampleProfile().toCbor();
    odd.insert(QStringLiteral("batches"), QCborArray{4});
    odd.insert(QStringLiteral("busy_watts"), QStringLiteral("lots"));
    odd.insert(QStringLiteral("link"), QCborMap());
    odd.insert(QStringLiteral("exchange"), QStringLiteral("none"));
    const ProfileReport p = ProfileReport::fromCborLenient(odd);
    QCOMPARE(p.large_batch, std::int64_t(0));
    QCOMPARE(p.large_step_seconds, 0.0);
    QCOMPARE(p.busy_watts, -1.0);
    QCOMPARE(p.idle_watts, sampleProfile().idle_watts);
    QVERIFY(!p.link);
    QVERIFY(p.exchange.isEmpty());
    // A link probe whose rates were not timed: a round trip only.
    const LinkFigures rtt =
        LinkFigures::fromCborLenient(QCborMap{{QStringLiteral("rtt_seconds"), 0.002}});
    QCOMPARE(rtt.rtt_seconds, 0.002);
    QVERIFY(!rtt.rates_timed && rtt.error.isEmpty());
}

void TestMessages::requestIds()
{
    QCborMap body;
    QCOMPARE(RequestId::of(body), qint64(-1));
    RequestId::set(body, 42);
    QCOMPARE(RequestId::of(body), qint64(42));
    QCborMap reply;
    QCOMPARE(RequestId::replyTo(reply), qint64(-1));
    RequestId::setReplyTo(reply, 42);
    QCOMPARE(RequestId::replyTo(reply), qint64(42));
    QCOMPARE(RequestId::of(reply), qint64(-1)); // a reply is not a request
}

QTEST_GUILESS_MAIN(TestMessages)
#include "tst_messages.moc"
