#include "net/training/trainingcoordinator.h"

#include "core/error.h"
#include "core/flatstate.h"
#include "core/memoryplanner.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "net/planner/clusterplanner.h"
#include "net/protocol/cborfield.h"
#include "net/protocol/protocol.h"
#include "net/training/compressedexchange.h"
#include "net/training/exchangeprobehost.h"
#include "net/training/linkprobe.h"
#include "net/training/parameterserver.h"
#include "net/training/shipment.h"
#include "net/training/storerequest.h"

#include <QCborArray>
#include <QDeadlineTimer>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcCoordinator, "edgetrain.coordinator")

struct TrainingCoordinator::Member
{
    enum class State { Starting, Ready, Training, Done, Failed, Lost };
    NodeId node;
    ControlClient *client = nullptr;
    bool connecting = false;
    State state = State::Starting;
    int id = 0; // stable over reconnects (the parameter server's worker id)
    int rank = -1;
    double speed = 0.0; // images/s of forward + backward, measured by the node
    std::int64_t testSamples = 0;
    qint64 readyRequest = -1, failedRequest = -1, doneRequest = -1, evalRequest = -1,
           pushRequest = -1;
    bool pushCompressed = false; // its held push came in bfloat16: the reply is a delta
    QCborMap doneBody;
    // The epoch's evaluation: the part (first, end) of the test set it was given and has not
    // reported (first == end: none), and what the parts it reported summed to.
    std::pair<std::int64_t, std::int64_t> testPart{0, 0};
    TestSums tested;
    QCborMap readyBody;    // its speed and profile, as it said when ready
    bool released = false; // not chosen to train: told to stop before the group formed
    // async: the ranges (first, count) of this epoch's sample order it trains, in the order it
    // trains them, and how many samples of them its applied pushes have covered.
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    std::int64_t applied = 0;
    // sync and local SGD: the final weights as it sent them (every rank of the last group does;
    // they are the same model), whole once the last of their chunks came.
    QByteArray weights;
    bool weightsWhole = false;

    QString label() const { return node.label(); }
};

struct TrainingCoordinator::Waiter
{
    Member *member = nullptr;
    qint64 request = -1;
    QStringList keys;
    bool get = false;
    QDeadlineTimer deadline;
};

TrainingCoordinator::TrainingCoordinator(JobSpec job, QByteArray clusterKey, QObject *parent)
    : QObject(parent), m_job(std::move(job)), m_key(std::move(clusterKey))
{
    qRegisterMetaType<ClusterEpoch>();
    qRegisterMetaType<ClusterEvent>();
    qRegisterMetaType<TrainingStatus>();
    m_waiterTimer.setInterval(100);
    connect(&m_waiterTimer, &QTimer::timeout, this, &TrainingCoordinator::serveWaiters);
    m_reconnectTimer.setInterval(1000);
    connect(&m_reconnectTimer, &QTimer::timeout, this, &TrainingCoordinator::reconnect);
}

TrainingCoordinator::~TrainingCoordinator() = default;

void TrainingCoordinator::setData(std::shared_ptr<const core::TensorDataset> train,
                                  std::shared_ptr<const core::TensorDataset> test)
{
    m_train = std::move(train);
    m_test = std::move(test);
    m_job.dataset = QStringLiteral("shipped");
    m_job.train_shipment = m_job.id + QStringLiteral("-train");
    m_job.test_shipment = m_test ? m_job.id + QStringLiteral("-test") : QString();
}

void TrainingCoordinator::start(const QList<ControlClient *> &clients)
{
    m_clock.start();
    if (m_linkProbe) {
        m_probeServer = std::make_unique<LinkProbeServer>();
        if (m_probeServer->listen()) {
            m_job.link_probe_port = m_probeServer->port();
            m_job.link_probe_token = QString::fromLatin1(m_probeServer->token());
            m_job.link_probe_turns = true;
            // The profiles time their exchange against a rank of ours during their link turn.
            m_exchangeHost = std::make_unique<ExchangeProbeHost>(
                [this](const QString &key, const QByteArray &value) {
                    QMetaObject::invokeMethod(
                        this,
                        [this, key, value] {
                            m_store[key] = value;
                            serveWaiters();
                        },
                        Qt::QueuedConnection);
                },
                std::chrono::milliseconds(m_job.exchangeProbeTimeoutMs()));
            m_job.exchange_probe = true;
        } else
            qCWarning(lcCoordinator).noquote()
                << "the link probe cannot listen:" << m_probeServer->errorString();
    }
    if (m_job.mode == TrainingMode::Async) {
        core::SgdOptions sgd;
        sgd.momentum = m_job.momentum;
        sgd.weight_decay = m_job.weight_decay;
        sgd.nesterov = m_job.nesterov;
        m_ps = std::make_unique<ParameterServer>(
            core::ModelSpec::fromJson(m_job.model, "the job's model"), m_job.seed, sgd,
            m_job.staleness, m_job.batch, m_job.average_decay);
        m_ps->setMaxRate(m_job.lr * (1.0 + 1e-9)); // no schedule goes above the job's rate
    }
    for (ControlClient *client : clients) {
        auto m = std::make_unique<Member>();
        m->id = int(m_members.size());
        m->node = NodeId{client->node().name, client->host(), client->port()};
        Member *raw = m.get();
        m_members.push_back(std::move(m));
        attach(raw, client);
        sendJob(raw);
    }
    m_waiterTimer.start();
    if (m_members.empty())
        finish(QStringLiteral("no nodes to train on"));
}

void TrainingCoordinator::attach(Member *m, ControlClient *client)
{
    client->setParent(this);
    m->client = client;
    connect(client, &ControlClient::message, this, [this, m](const Frame &f) { onMessage(m, f); });
    connect(client, &ControlClient::failed, this,
            [this, m](const QString &reason) { onLost(m, reason); });
    connect(client, &ControlClient::metrics, this,
            [this, m](const SystemSample &s) { Q_EMIT nodeMetrics(m->node, s); });
    client->subscribeMetrics();
}

void TrainingCoordinator::sendJob(Member *m)
{
    m->state = Member::State::Starting;
    m->readyRequest = m->failedRequest = m->doneRequest = m->evalRequest = m->pushRequest = -1;
    // Chunked and checksummed once, sent to every node (and to a node that comes back).
    if (m_train && m_chunks.isEmpty()) {
        // One byte per value only if every node taking part decodes it (older nodes do not).
        bool palette8 = true;
        for (const auto &member : m_members)
            if (member->client)
                palette8 = palette8 && member->client->node().shipment_encodings.contains(
                                           QLatin1String(Shipment::kPalette8));
        m_chunks = Shipment::chunks(*m_train, m_job.train_shipment, Shipment::kDefaultChunkBytes,
                                    palette8);
        if (m_test)
            m_chunks += Shipment::chunks(*m_test, m_job.test_shipment, Shipment::kDefaultChunkBytes,
                                         palette8);
    }
    for (const QCborMap &chunk : m_chunks)
        m->client->send(Message::DataChunk, chunk);
    JobSpec job = m_job.forNodes();
    if (const auto b = m_budgets.find(m->client->node().name); b != m_budgets.end())
        job.memory_budget_bytes = b->second;
    m->client->send(Message::Job, job.toCbor());
}

std::int64_t TrainingCoordinator::largestBatchWithin(std::int64_t budget)
{
    if (const auto known = m_batchWithin.find(budget); known != m_batchWithin.end())
        return known->second;
    core::Model model(core::ModelSpec::fromJson(m_job.model, "the job's model"), m_job.seed);
    std::int64_t lo = 0, hi = m_job.batch + 1; // lo fits (0 trivially), find the largest
    while (lo < hi) {
        const std::int64_t mid = (lo + hi + 1) / 2;
        if (core::MemoryPlanner(model, mid).plan(budget).fits)
            lo = mid;
        else
            hi = mid - 1;
    }
    return m_batchWithin[budget] = lo;
}

std::vector<double> TrainingCoordinator::fitShares(const std::vector<Member *> &members,
                                                   std::vector<double> shares)
{
    // A worker plans its memory for its part of (batch + 1) split by the shares: at most
    // 2 + (total - n) * share (one each first, then a rounded-up remainder).
    const double total = double(m_job.batch + 1), n = double(members.size());
    std::vector<double> cap(members.size(), 1.0);
    bool any = false;
    for (std::size_t i = 0; i < members.size(); ++i) {
        const auto b = m_budgets.find(members[i]->client->node().name);
        if (b == m_budgets.end() || b->second < 0) {
            // The node's own limit, as its profile measured it (the largest local batch).
            const std::int64_t fit = cborInteger(members[i]
                                                     ->readyBody.value(QLatin1String("profile"))
                                                     .toMap()
                                                     .value(QLatin1String("max_local_batch")),
                                                 -1);
            if (fit >= 0) {
                cap[i] = std::max(1e-3, double(fit - 2) / std::max(1.0, total - n));
                any = true;
            }
            continue;
        }
        try {
            const std::int64_t fit = largestBatchWithin(b->second);
            // Never 0: a group's shares must all be positive. A node that cannot take even
            // its one sample refuses the job itself and says what would fit.
            cap[i] = std::max(1e-3, double(fit - 2) / std::max(1.0, total - n));
            any = true;
        } catch (const std::exception &) {
            // The model is refused when the job starts: nothing to cap.
        }
    }
    if (any)
        capShares(shares, cap); // where nobody has room the workers say what does not fit
    // When nobody had room the excess went nowhere: shares must still sum to 1.
    const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    if (sum > 0.0)
        for (double &share : shares)
            share /= sum;
    return shares;
}

QString eventKindName(ClusterEventKind kind)
{
    switch (kind) {
    case ClusterEventKind::Lost:
        return QStringLiteral("lost");
    case ClusterEventKind::Failed:
        return QStringLiteral("failed");
    case ClusterEventKind::Rejoined:
        return QStringLiteral("rejoined");
    case ClusterEventKind::Regrouped:
        return QStringLiteral("regrouped");
    case ClusterEventKind::Rebalanced:
        return QStringLiteral("rebalanced");
    case ClusterEventKind::CollectiveFailed:
        return QStringLiteral("collective failed");
    case ClusterEventKind::Reassigned:
        return QStringLiteral("reassigned");
    }
    return QStringLiteral("unknown");
}

std::optional<ClusterEventKind> eventKindFromName(const QString &name)
{
    for (const ClusterEventKind k :
         {ClusterEventKind::Lost, ClusterEventKind::Failed, ClusterEventKind::Rejoined,
          ClusterEventKind::Regrouped, ClusterEventKind::Rebalanced,
          ClusterEventKind::CollectiveFailed, ClusterEventKind::Reassigned})
        if (eventKindName(k) == name)
            return k;
    return std::nullopt;
}

void TrainingCoordinator::note(Member *m, ClusterEventKind kind, const QString &message)
{
    ClusterEvent e;
    e.seconds = double(m_clock.elapsed()) / 1000.0;
    e.node = m ? m->node : NodeId();
    e.kind = kind;
    e.message = message;
    qCInfo(lcCoordinator).noquote() << e.node.label() << eventKindName(kind) << "-" << message;
    m_result.events.push_back(e);
    Q_EMIT clusterEvent(e);
}

void TrainingCoordinator::reply(Member *m, qint64 request, QCborMap body)
{
    if (request < 0 || !m->client)
        return;
    body.insert(QStringLiteral("reply_to"), request);
    m->client->send(Message::Reply, body);
}

bool TrainingCoordinator::isActive(const Member *m) const
{
    return m->state == Member::State::Training;
}

std::vector<TrainingCoordinator::Member *> TrainingCoordinator::participants() const
{
    std::vector<Member *> out;
    for (const auto &m : m_members)
        if (isActive(m.get()))
            out.push_back(m.get());
    std::sort(out.begin(), out.end(),
              [](const Member *a, const Member *b) { return a->rank < b->rank; });
    return out;
}

namespace {
/** The parameter server's model as bytes for a message. */
QByteArray floatBytes(const std::vector<float> &values)
{
    return QByteArray(reinterpret_cast<const char *>(values.data()),
                      qsizetype(values.size() * sizeof(float)));
}

QCborMap stopReply()
{
    return QCborMap{{Action::Field, Action::Stop}};
}
} // namespace

void TrainingCoordinator::formGroup()
{
    std::vector<Member *> members = participants();
    for (const auto &m : m_members)
        if (m->state == Member::State::Ready)
            members.push_back(m.get());
    ++m_generation;
    ++m_result.generations;
    std::vector<double> speeds;
    for (Member *m : members)
        speeds.push_back(m->speed);
    std::vector<double> shares = sharesFromSpeeds(speeds);
    // The first group: where per-epoch rebalancing would settle, from the nodes' profiles (the
    // time per step at two batch sizes), not their speed at a small batch — the planner
    // predicts this split. Later groups follow the speeds measured over the epochs.
    if (m_generation == 0) {
        std::vector<DeviceMeasurement> profiles;
        for (Member *m : members)
            if (m->readyBody.value(QLatin1String("profile"))
                    .toMap()
                    .contains(QLatin1String("step_seconds")))
                profiles.push_back(measurementFromReady(m->node.name, m->readyBody));
        if (profiles.size() == members.size()) {
            std::vector<const DeviceMeasurement *> d;
            for (const auto &p : profiles)
                d.push_back(&p);
            shares = settledShares(d, m_job.batch);
        }
    }
    m_shares = fitShares(members, shares);
    for (std::size_t i = 0; i < members.size(); ++i)
        members[i]->rank = int(i);
    // Keys of earlier generations are of no use to anyone now.
    const QString prefix = QStringLiteral("gen-%1/").arg(m_generation);
    for (auto it = m_store.begin(); it != m_store.end();)
        it = it->first.startsWith(prefix) ? std::next(it) : m_store.erase(it);
    m_groupBroken = false;
    QStringList names;
    for (std::size_t i = 0; i < members.size(); ++i)
        names << QStringLiteral("%1 %2%")
                     .arg(members[i]->node.name)
                     .arg(100.0 * m_shares[i], 0, 'f', 1);
    if (m_generation > 0)
        note(nullptr, ClusterEventKind::Regrouped,
             QStringLiteral("group %1 of %2 node(s): %3")
                 .arg(m_generation)
                 .arg(members.size())
                 .arg(names.join(QStringLiteral(", "))));
    else
        qCInfo(lcCoordinator).noquote() << "group 0:" << names.join(QStringLiteral(", "));
    // Joiners start now, with the group.
    for (Member *m : members) {
        if (m->state != Member::State::Ready)
            continue;
        m->state = Member::State::Training;
        if (m_ps)
            m_ps->addWorker(m->id);
        GroupSpec g{m_generation, m->rank, int(members.size()), m_shares};
        reply(m, m->readyRequest,
              QCborMap{{Action::Field, Action::Start},
                       {QStringLiteral("group"), g.toCbor()},
                       {QStringLiteral("epoch"), m_epoch}});
        m->readyRequest = -1;
    }
}

void TrainingCoordinator::maybeStart()
{
    if (m_phase != Phase::Starting)
        return;
    int ready = 0;
    for (const auto &m : m_members) {
        if (m->state == Member::State::Starting)
            return; // still loading or calibrating
        ready += m->state == Member::State::Ready;
    }
    if (ready == 0)
        return finish(QStringLiteral("no node could start the job"));
    if (m_stopping) {
        for (const auto &m : m_members)
            if (m->state == Member::State::Ready)
                reply(m.get(), m->readyRequest, stopReply());
        return finish(QString());
    }
    if (m_selection && !m_selected) {
        m_selected = true;
        std::vector<Member *> waiting;
        std::vector<ReadyNode> nodes;
        for (const auto &m : m_members)
            if (m->state == Member::State::Ready) {
                waiting.push_back(m.get());
                nodes.push_back({m->node, m->readyBody});
            }
        const std::vector<int> keep = m_selection(nodes);
        m_probeServer.reset();     // every node has measured its link
        m_job.link_probe_port = 0; // a node that rejoins later does not probe a closed port
        for (std::size_t i = 0; i < waiting.size(); ++i) {
            if (std::find(keep.begin(), keep.end(), int(i)) != keep.end())
                continue;
            Member *m = waiting[i];
            reply(m, m->readyRequest, stopReply());
            m->readyRequest = -1;
            m->released = true;
            m->state = Member::State::Done;
            m_result.released.push_back(m->node);
        }
        if (std::none_of(waiting.begin(), waiting.end(),
                         [](const Member *m) { return m->state == Member::State::Ready; }))
            return finish(QString()); // a plan only: nobody trains
    }
    m_phase = Phase::Training;
    formGroup();
    assignShards();
    m_reconnectTimer.start();
    Q_EMIT trainingStarted();
}

void TrainingCoordinator::maybeRegroup()
{
    if (m_phase != Phase::Training || m_job.mode == TrainingMode::Async || !m_groupBroken)
        return;
    const auto members = participants();
    if (members.empty())
        return maybeFinish();
    for (Member *m : members)
        if (m->failedRequest < 0 && m->doneRequest < 0)
            return; // still running into the failure (or its collective's timeout)
    if (m_stopping) {
        for (Member *m : members) {
            reply(m, std::max(m->failedRequest, m->doneRequest), stopReply());
            m->failedRequest = m->doneRequest = -1;
        }
        return;
    }
    formGroup();
    for (Member *m : participants()) {
        const qint64 request = std::max(m->failedRequest, m->doneRequest);
        if (request < 0)
            continue;
        GroupSpec g{m_generation, m->rank, int(m_shares.size()), m_shares};
        reply(m, request,
              QCborMap{{Action::Field, Action::Regroup}, {QStringLiteral("group"), g.toCbor()}});
        m->failedRequest = m->doneRequest = -1;
        m->doneBody = {};
    }
}

std::vector<TrainingCoordinator::Member *> TrainingCoordinator::atBarrier(qint64 Member::*request)
{
    if (m_phase != Phase::Training)
        return {};
    const auto members = participants();
    if (members.empty()) {
        maybeFinish();
        return {};
    }
    for (Member *m : members)
        if (m->*request < 0)
            return {};
    return members;
}

void TrainingCoordinator::maybeEpochDone()
{
    const auto members = atBarrier(&Member::doneRequest);
    if (members.empty())
        return;
    if (m_groupBroken && m_job.mode != TrainingMode::Async)
        return maybeRegroup();
    if (m_ps && !m_orphans.empty() && !m_stopping && handOutOrphans(members))
        return; // they end the epoch again when they have trained them
    // Evaluation: the test set split by speed among the nodes at the barrier.
    std::int64_t testSize = std::numeric_limits<std::int64_t>::max();
    std::vector<double> speeds;
    for (Member *m : members) {
        testSize = std::min(testSize, m->testSamples);
        speeds.push_back(m->speed);
    }
    const auto parts = splitByShares(testSize, sharesFromSpeeds(speeds));
    QByteArray weights;
    if (m_ps)
        weights = floatBytes(m_ps->resultWeights());
    m_untested.clear();
    m_lostTested = {};
    std::int64_t begin = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
        QCborMap body{{Action::Field, m_stopping ? Action::Stop : Action::Evaluate},
                      {QStringLiteral("test_begin"), qint64(begin)},
                      {QStringLiteral("test_end"), qint64(begin + parts[i])}};
        if (m_ps)
            body.insert(QStringLiteral("weights"), weights);
        if (!m_stopping)
            members[i]->testPart = {begin, begin + parts[i]};
        begin += parts[i];
        reply(members[i], members[i]->doneRequest, body);
        members[i]->doneRequest = -1;
    }
    if (m_stopping)
        for (Member *m : members)
            m->doneBody = {};
}

void TrainingCoordinator::maybeEpochEval()
{
    const auto members = atBarrier(&Member::evalRequest);
    if (members.empty())
        return;
    // A node lost while evaluating took its part of the test set with it: the epoch's figures
    // would be of the rest, and the model (the weights a run saves) would not score them on
    // the whole test set (CI's chaos run, seed 7683: 637 of 1000 samples). The others evaluate
    // that part on the same model first.
    if (!m_untested.empty() && !m_stopping && handOutUntested(members))
        return; // they report again when they have evaluated it
    ClusterEpoch e;
    e.epoch = m_epoch;
    e.nodes = int(members.size());
    e.shares = m_shares;
    double lossSum = 0, correct = 0, seen = 0, targets = 0, testLoss = 0, testCorrect = 0;
    bool global = false;
    for (Member *m : members) {
        const QCborMap &d = m->doneBody;
        e.seconds = std::max(e.seconds, d.value(QStringLiteral("seconds")).toDouble());
        if (d.value(QStringLiteral("global")).toBool()) {
            if (!global) { // the collective modes' sums are the cluster's already
                lossSum = d.value(QStringLiteral("loss_sum")).toDouble();
                correct = d.value(QStringLiteral("correct")).toDouble();
                seen = d.value(QStringLiteral("seen")).toDouble();
                targets = d.value(QStringLiteral("targets")).toDouble();
                global = true;
            }
        } else {
            lossSum += d.value(QStringLiteral("loss_sum")).toDouble();
            correct += d.value(QStringLiteral("correct")).toDouble();
            seen += d.value(QStringLiteral("seen")).toDouble();
            targets += d.value(QStringLiteral("targets")).toDouble();
        }
        const double speed = d.value(QStringLiteral("compute_images_per_second")).toDouble();
        if (speed > 0)
            m->speed = speed;
        testLoss += m->tested.loss;
        testCorrect += double(m->tested.correct);
        e.test_count += m->tested.count;
    }
    testLoss += m_lostTested.loss;
    testCorrect += double(m_lostTested.correct);
    e.test_count += m_lostTested.count;
    // async: what members lost in this epoch had trained (their pushes were applied) counts
    // too; the loss and accuracy are of the samples whose figures reached us.
    e.samples = std::int64_t(std::llround(seen)) + (m_ps ? m_lostApplied : 0);
    e.train_loss = seen > 0 ? lossSum / seen : 0.0;
    // Accuracy over what it counts (samples; a detector's objects), as a local Trainer does.
    e.train_accuracy = targets > 0 ? correct / targets : 0.0;
    if (e.test_count > 0) {
        e.test_loss = testLoss / double(e.test_count);
        e.test_accuracy = testCorrect / double(e.test_count);
    }
    e.images_per_second = e.seconds > 0 ? double(e.samples) / e.seconds : 0.0;
    // Keep-best: a new lowest validation loss asks for this epoch's model (every member at the
    // barrier holds the same one; the parameter server holds it in async mode).
    Member *sendsBest = nullptr;
    if (m_keepBest && e.test_count > 0 && (m_bestEpoch == 0 || e.test_loss < m_bestLoss)) {
        m_bestLoss = e.test_loss;
        m_bestEpoch = e.epoch;
        m_bestWeights = m_ps ? floatBytes(m_ps->resultWeights()) : QByteArray();
        m_bestComplete = m_ps != nullptr;
        if (!m_ps)
            sendsBest = members.front();
    }
    m_result.epochs.push_back(e);
    Q_EMIT epochFinished(e);
    ++m_epoch;

    // The next epoch: a new group if someone was lost or is waiting to join, or if the measured
    // speeds moved a share by more than 10 %.
    bool joiners = false;
    for (const auto &m : m_members)
        joiners = joiners || m->state == Member::State::Ready;
    std::vector<double> speeds;
    for (Member *m : members)
        speeds.push_back(m->speed);
    const auto shares = fitShares(members, sharesFromSpeeds(speeds));
    bool rebalance = false;
    for (std::size_t i = 0; i < shares.size() && i < m_shares.size(); ++i)
        rebalance = rebalance || std::abs(shares[i] - m_shares[i]) > 0.10 * m_shares[i];
    // Early stopping: the patience's epochs without a new lowest validation loss end the run here,
    // finished, with the kept epoch's weights.
    if (m_keepBest && m_patience > 0 && m_bestEpoch > 0 && !m_stopping &&
        e.epoch - m_bestEpoch >= m_patience && m_epoch <= m_job.epochs) {
        m_endingEarly = true;
        m_result.ended_early_epoch = e.epoch;
        qCInfo(lcCoordinator).noquote()
            << QStringLiteral("no lower validation loss in %1 epochs since epoch %2: the run ends "
                              "after epoch %3 of %4")
                   .arg(m_patience)
                   .arg(m_bestEpoch)
                   .arg(e.epoch)
                   .arg(m_job.epochs);
    }
    const bool last = m_epoch > m_job.epochs || m_endingEarly;
    if (m_ps)
        m_ps->resetClocks();
    const bool regroup = !last && !m_stopping && (m_groupBroken || joiners || rebalance);
    if (regroup) {
        if (rebalance && !m_groupBroken && !joiners)
            note(nullptr, ClusterEventKind::Rebalanced,
                 QStringLiteral("batch shares follow the measured speeds"));
        formGroup();
    }
    for (Member *m : participants()) {
        QCborMap body{{Action::Field, m_stopping      ? Action::Stop
                                      : m_endingEarly ? Action::Finish
                                                      : Action::Continue}};
        if (m->evalRequest >= 0 && regroup) {
            GroupSpec g{m_generation, m->rank, int(m_shares.size()), m_shares};
            body.insert(QStringLiteral("next_group"), g.toCbor());
        }
        if (m == sendsBest)
            body.insert(QStringLiteral("send_weights"), e.epoch);
        reply(m, m->evalRequest, body);
        m->evalRequest = -1;
        m->doneBody = {};
        m->tested = {};
    }
    if (!last && !m_stopping)
        assignShards();
}

void TrainingCoordinator::assignShards()
{
    m_orphans.clear();
    m_lostApplied = 0;
    if (!m_ps)
        return;
    const auto members = participants(); // rank order
    if (members.empty() || members.size() != m_shares.size())
        return;
    const std::int64_t size =
        cborInteger(members.front()->readyBody.value(QStringLiteral("train_samples")));
    const auto parts = splitByShares(size, m_shares);
    std::int64_t first = 0;
    for (std::size_t rank = 0; rank < members.size(); ++rank) {
        Member *m = members[rank];
        m->ranges = {{first, parts[rank]}};
        m->applied = 0;
        first += parts[rank];
    }
}

void TrainingCoordinator::orphanRest(Member *m)
{
    m_lostApplied += m->applied;
    std::int64_t covered = m->applied;
    for (const auto &[first, count] : m->ranges) {
        const std::int64_t done = std::min(covered, count);
        covered -= done;
        if (count > done)
            m_orphans.emplace_back(first + done, count - done);
    }
    m->ranges.clear();
    m->applied = 0;
}

bool TrainingCoordinator::handOutOrphans(const std::vector<Member *> &members)
{
    std::int64_t total = 0;
    for (const auto &orphan : m_orphans)
        total += orphan.second;
    std::vector<Member *> takers; // nodes of this version (older ones end their epoch as it is)
    std::vector<double> speeds;
    for (Member *m : members)
        if (m->readyBody.value(QStringLiteral("takes_more")).toBool()) {
            takers.push_back(m);
            speeds.push_back(m->speed);
        }
    if (takers.empty() || total == 0) {
        if (total > 0)
            qCWarning(lcCoordinator).noquote()
                << QStringLiteral("%1 samples of epoch %2 go untrained: no node left can take a "
                                  "lost node's part")
                       .arg(total)
                       .arg(m_epoch);
        m_orphans.clear();
        return false;
    }
    const auto parts = splitByShares(total, sharesFromSpeeds(speeds));
    std::size_t next = 0;  // the orphan range being handed out
    std::int64_t used = 0; // of it
    QStringList names;
    for (std::size_t i = 0; i < takers.size(); ++i) {
        Member *m = takers[i];
        QCborArray ranges;
        for (std::int64_t want = parts[i]; want > 0 && next < m_orphans.size();) {
            const auto [first, count] = m_orphans[next];
            const std::int64_t take = std::min(want, count - used);
            ranges.append(QCborArray{qint64(first + used), qint64(take)});
            m->ranges.emplace_back(first + used, take);
            want -= take;
            used += take;
            if (used == count) {
                ++next;
                used = 0;
            }
        }
        if (ranges.isEmpty())
            continue; // stays at the barrier
        m_ps->setRunning(m->id, true);
        reply(m, m->doneRequest,
              QCborMap{{Action::Field, Action::More}, {QStringLiteral("ranges"), ranges}});
        m->doneRequest = -1;
        names << QStringLiteral("%1 %2").arg(m->node.name).arg(parts[i]);
    }
    note(nullptr, ClusterEventKind::Reassigned,
         QStringLiteral("%1 samples of epoch %2 that a lost node had not trained: %3")
             .arg(total)
             .arg(m_epoch)
             .arg(names.join(QStringLiteral(", "))));
    m_orphans.clear();
    return true;
}

void TrainingCoordinator::leaveEvaluation(Member *m)
{
    if (m->testPart.second > m->testPart.first)
        m_untested.push_back(m->testPart);
    m_lostTested.loss += m->tested.loss;
    m_lostTested.correct += m->tested.correct;
    m_lostTested.count += m->tested.count;
    m->testPart = {0, 0};
    m->tested = {};
}

bool TrainingCoordinator::handOutUntested(const std::vector<Member *> &members)
{
    // A whole part to each node that takes one, the rest as they report: evaluating a part is
    // short next to an epoch, and the members wait at the barrier anyway.
    bool any = false;
    for (Member *m : members) {
        if (m_untested.empty())
            break;
        if (!m->readyBody.value(QStringLiteral("evaluates_more")).toBool())
            continue; // an older node ends its evaluation with its own part
        const auto [first, end] = m_untested.back();
        m_untested.pop_back();
        m->testPart = {first, end};
        reply(m, m->evalRequest,
              QCborMap{{Action::Field, Action::Evaluate},
                       {QStringLiteral("test_begin"), qint64(first)},
                       {QStringLiteral("test_end"), qint64(end)}});
        m->evalRequest = -1;
        qCInfo(lcCoordinator).noquote()
            << QStringLiteral("%1 evaluates test samples %2-%3 of epoch %4 that a lost node left")
                   .arg(m->label())
                   .arg(first)
                   .arg(end - 1)
                   .arg(m_epoch);
        any = true;
    }
    if (!any) {
        std::int64_t total = 0;
        for (const auto &[first, end] : m_untested)
            total += end - first;
        qCWarning(lcCoordinator).noquote()
            << QStringLiteral("%1 test samples of epoch %2 go unevaluated: no node left can take "
                              "a lost node's part")
                   .arg(total)
                   .arg(m_epoch);
        m_untested.clear();
    }
    return any;
}

void TrainingCoordinator::releaseHeldPushes()
{
    if (!m_ps)
        return;
    for (const auto &m : m_members) {
        if (m->pushRequest < 0 || !isActive(m.get()) || !m_ps->mayProceed(m->id))
            continue;
        reply(m.get(), m->pushRequest, weightsReply(m.get(), m->pushCompressed));
        m->pushRequest = -1;
    }
}

QCborMap TrainingCoordinator::weightsReply(Member *m, bool compressed)
{
    QCborMap r{{QStringLiteral("version"), qint64(m_ps->version())}};
    if (compressed) {
        const QByteArray delta = m_ps->delta(m->id);
        if (!delta.isEmpty()) {
            r.insert(QStringLiteral("delta_bf16"), delta);
            return r;
        }
    }
    r.insert(QStringLiteral("weights"), floatBytes(m_ps->pull(m->id)));
    return r;
}

void TrainingCoordinator::maybeFinish()
{
    if (m_phase == Phase::Finished)
        return;
    if (m_phase == Phase::Starting)
        return maybeStart();
    for (const auto &m : m_members)
        if (m->state == Member::State::Training)
            return;
    for (const auto &m : m_members)
        if (m->state == Member::State::Ready)
            reply(m.get(), m->readyRequest, stopReply());
    bool anyDone = false; // a node that trained to the end (a released one never trained)
    for (const auto &m : m_members)
        anyDone = anyDone || (m->state == Member::State::Done && !m->released);
    finish(anyDone ? QString() : QStringLiteral("every node was lost or failed"));
}

void TrainingCoordinator::finish(const QString &error)
{
    if (m_phase == Phase::Finished)
        return;
    m_phase = Phase::Finished;
    m_reconnectTimer.stop();
    m_waiterTimer.stop();
    m_result.finished = error.isEmpty();
    m_result.error = error.isEmpty() || m_firstFailure.isEmpty()
                         ? error
                         : error + QStringLiteral(" - ") + m_firstFailure;
    m_result.cancelled = m_result.cancelled || m_stopping;
    m_result.seconds = double(m_clock.elapsed()) / 1000.0;
    if (m_ps) {
        m_result.weights = m_ps->resultWeights();
        m_result.max_staleness = m_ps->maxStaleness();
        m_result.pushes = m_ps->pushes();
        m_result.held_pushes = m_ps->held();
    } else {
        // Every rank of the last group sent the final weights: rank 0's, or, if that node was
        // lost before they all came (a partition at the very end), the lowest rank's that did.
        const Member *from = nullptr;
        for (const auto &m : m_members)
            if (m->weightsWhole && !m->weights.isEmpty() &&
                m->weights.size() % qsizetype(sizeof(float)) == 0 &&
                (!from || (m->rank >= 0 && (from->rank < 0 || m->rank < from->rank))))
                from = m.get();
        if (from) {
            m_result.weights.resize(std::size_t(from->weights.size()) / sizeof(float));
            std::memcpy(m_result.weights.data(), from->weights.constData(),
                        std::size_t(from->weights.size()));
        }
    }
    // The best epoch's model instead of the last, when it arrived whole and has the same size.
    if (m_keepBest && m_bestComplete && m_bestEpoch > 0 && !m_result.weights.empty() &&
        m_bestWeights.size() == qsizetype(m_result.weights.size() * sizeof(float))) {
        std::memcpy(m_result.weights.data(), m_bestWeights.constData(),
                    std::size_t(m_bestWeights.size()));
        m_result.best_epoch = m_bestEpoch;
    }
    for (const auto &m : m_members)
        if (m->client &&
            (m->state == Member::State::Training || m->state == Member::State::Starting))
            m->client->send(Message::Stop); // a joiner still loading need not finish
    qCInfo(lcCoordinator).noquote()
        << "run finished" << (error.isEmpty() ? QStringLiteral("") : error);
    Q_EMIT finished();
}

void TrainingCoordinator::stop()
{
    if (m_phase == Phase::Finished || m_stopping)
        return;
    m_stopping = true;
    for (const auto &m : m_members) {
        if (m->client &&
            (m->state == Member::State::Training || m->state == Member::State::Starting))
            m->client->send(Message::Stop);
        if (m->state == Member::State::Ready && m_phase == Phase::Training) {
            reply(m.get(), m->readyRequest, stopReply());
            m->state = Member::State::Done;
        }
        if (m->pushRequest >= 0) {
            reply(m.get(), m->pushRequest, stopReply());
            m->pushRequest = -1;
        }
    }
    maybeStart();
    maybeRegroup();
    maybeEpochDone();
    maybeEpochEval();
    maybeFinish();
}

void TrainingCoordinator::onLost(Member *m, const QString &reason)
{
    if (m_exchangeHost)
        m_exchangeHost->forget(m->id);
    if (m->client) {
        m->client->disconnect(this);
        m->client->deleteLater();
        m->client = nullptr;
    }
    m->connecting = false;
    if (m_phase == Phase::Finished || m->state == Member::State::Lost)
        return;
    const bool wasActive = isActive(m);
    const bool done = m->state == Member::State::Done || m->state == Member::State::Failed;
    m->state = done ? m->state : Member::State::Lost;
    if (done)
        return;
    note(m, ClusterEventKind::Lost, reason);
    m_waiters.erase(std::remove_if(m_waiters.begin(), m_waiters.end(),
                                   [m](const auto &w) { return w->member == m; }),
                    m_waiters.end());
    m->readyRequest = m->failedRequest = m->doneRequest = m->evalRequest = m->pushRequest = -1;
    if (wasActive) {
        m_groupBroken = true; // async: the next epoch's shares leave it out
        leaveEvaluation(m);
        if (m_ps) {
            m_ps->removeWorker(m->id);
            orphanRest(m);
            releaseHeldPushes();
        }
    }
    maybeStart();
    maybeRegroup();
    maybeEpochDone();
    maybeEpochEval();
    maybeFinish();
}

void TrainingCoordinator::reconnect()
{
    if (!m_rejoin || m_stopping || m_phase != Phase::Training)
        return;
    for (const auto &owned : m_members) {
        Member *m = owned.get();
        if (m->state != Member::State::Lost || m->connecting)
            continue;
        m->connecting = true;
        auto *client = new ControlClient(m->node.host, m->node.port, m_key, this);
        connect(client, &ControlClient::ready, this, [this, m, client] {
            client->disconnect(this);
            m->connecting = false;
            if (m_phase != Phase::Training || m_stopping) {
                client->deleteLater();
                return;
            }
            note(m, ClusterEventKind::Rejoined,
                 QStringLiteral("answering again: sent the job, joins at the next epoch"));
            m->node.name = client->node().name;
            attach(m, client);
            sendJob(m);
        });
        connect(client, &ControlClient::failed, this, [m, client] {
            m->connecting = false;
            client->deleteLater();
        });
        client->connectToNode(std::chrono::milliseconds(1500));
    }
}

void TrainingCoordinator::storeRequest(Member *m, const Frame &frame)
{
    QString error;
    qint64 request = -1;
    const auto r = StoreRequest::fromCbor(frame.type, frame.body, &error, &request);
    if (!r) {
        reply(m, request, QCborMap{{QStringLiteral("error"), error}});
        return;
    }
    if (r->kind == StoreRequest::Kind::Set) {
        m_store[r->keys.front()] = r->value;
        if (m_exchangeHost)
            m_exchangeHost->keySet(r->keys.front(), r->value);
        reply(m, r->request, {});
        serveWaiters();
        return;
    }
    auto w = std::make_unique<Waiter>();
    w->member = m;
    w->request = r->request;
    w->get = r->kind == StoreRequest::Kind::Get;
    w->keys = r->keys;
    w->deadline = QDeadlineTimer(r->timeout_ms);
    m_waiters.push_back(std::move(w));
    serveWaiters();
}

void TrainingCoordinator::exchangeProbe(Member *m, const Frame &frame)
{
    // Answered at once (queued, or refused); the probe's result is the node's to time. What
    // our rank met is logged: the node sees the same failure from its side.
    const qint64 request = cborInteger(frame.body.value(QStringLiteral("request")), -1);
    if (!m_exchangeHost) {
        reply(m, request,
              QCborMap{{QStringLiteral("error"),
                        QStringLiteral("this coordinator hosts no exchange probe")}});
        return;
    }
    const qint64 floats = cborInteger(frame.body.value(QStringLiteral("floats")), -1);
    const QString refused = m_exchangeHost->serve(
        m->id, frame.body.value(QStringLiteral("prefix")).toString(), m->client->localAddress(),
        floats > 0 ? std::size_t(floats) : 0, [node = m->label()](const QString &error) {
            if (!error.isEmpty())
                qCWarning(lcCoordinator).noquote()
                    << node << "- the exchange probe's rank here failed:" << error;
        });
    reply(m, request,
          refused.isEmpty() ? QCborMap{} : QCborMap{{QStringLiteral("error"), refused}});
}

void TrainingCoordinator::serveWaiters()
{
    for (auto it = m_waiters.begin(); it != m_waiters.end();) {
        Waiter &w = **it;
        const bool all = std::all_of(w.keys.begin(), w.keys.end(),
                                     [this](const QString &k) { return m_store.count(k) > 0; });
        if (all) {
            QCborMap body;
            if (w.get)
                body.insert(QStringLiteral("value"), m_store[w.keys.front()]);
            reply(w.member, w.request, body);
        } else if (w.deadline.hasExpired()) {
            reply(w.member, w.request,
                  QCborMap{{QStringLiteral("error"),
                            QStringLiteral("'%1' not set in time: a peer did not arrive")
                                .arg(w.keys.join(QStringLiteral("', '")))}});
        } else {
            ++it;
            continue;
        }
        it = m_waiters.erase(it);
    }
}

void TrainingCoordinator::onMessage(Member *m, const Frame &frame)
{
    const QString &type = frame.type;
    const QCborMap &body = frame.body;
    const qint64 request = cborInteger(body.value(QStringLiteral("request")), -1);
    if (m->released) {
        // Not chosen: its job ends with the stop it was given; nothing it sends counts.
        if (type == Message::JobDone || type == Message::JobFailed)
            m->state = Member::State::Done;
        return;
    }
    if (type.startsWith(QLatin1String("store_"))) {
        storeRequest(m, frame);
    } else if (type == Message::ExchangeProbe) {
        exchangeProbe(m, frame);
    } else if (type == Message::Progress) {
        Q_EMIT nodeProgress(m->node, TrainingStatus::fromCbor(body));
    } else if (type == Message::PsPull || type == Message::PsPush) {
        if (!m_ps || m_stopping || !isActive(m))
            return reply(m, request, stopReply());
        const bool compressed = body.contains(QLatin1String("gradient_bf16"));
        if (type == Message::PsPush) {
            std::vector<float> data;
            const bool ok =
                readPush(body, m_ps->gradientSize(), m_ps->pushSize() - m_ps->gradientSize(), data);
            const auto p =
                ok ? m_ps->push(
                         m->id, std::uint64_t(cborInteger(body.value(QStringLiteral("version")))),
                         data.data(), data.size(), body.value(QStringLiteral("lr")).toDouble(),
                         cborInteger(body.value(QStringLiteral("count"))))
                   : ParameterServer::Push{};
            if (p.applied)
                m->applied += cborInteger(body.value(QStringLiteral("count")));
            if (!p.applied) {
                // Out of the run, like a failed node: the parameter server must not wait for
                // its clock, or every other node is held once it is S pushes ahead.
                reply(m, request, stopReply());
                return memberFailed(m, QStringLiteral("sent a malformed gradient push"));
            }
            if (!m_ps->mayProceed(m->id)) {
                m->pushRequest = request; // held until the slowest catches up
                m->pushCompressed = compressed;
                m_ps->countHeld();
                return releaseHeldPushes();
            }
        }
        reply(m, request, weightsReply(m, compressed));
        releaseHeldPushes();
    } else if (type == Message::JobReady) {
        m->speed = body.value(QStringLiteral("images_per_second")).toDouble();
        m->readyBody = body;
        m->testSamples = cborInteger(body.value(QStringLiteral("test_samples")));
        m->readyRequest = request;
        m->state = Member::State::Ready;
        if (m_phase == Phase::Training && m_stopping)
            reply(m, request, stopReply());
        maybeStart(); // a joiner in a running job waits for the next epoch
    } else if (type == Message::CollectiveFailed) {
        if (!m_groupBroken)
            note(m, ClusterEventKind::CollectiveFailed,
                 body.value(QStringLiteral("message")).toString());
        m_groupBroken = true;
        m->failedRequest = request;
        maybeRegroup();
    } else if (type == Message::EpochDone) {
        m->doneRequest = request;
        m->doneBody = body;
        if (m_ps) {
            m_ps->setRunning(m->id, false);
            const QString held = body.value(QStringLiteral("held_fingerprint")).toString();
            if (!held.isEmpty()) { // older nodes send none
                ++m_result.mirror_checks;
                if (held != m_ps->mirrorFingerprint(m->id)) {
                    ++m_result.mirror_mismatches;
                    qCWarning(lcCoordinator).noquote()
                        << m->label()
                        << "holds weights that differ from the parameter server's copy of "
                           "them; its next epoch starts from the full weights";
                }
            }
            releaseHeldPushes();
        }
        maybeEpochDone();
        maybeRegroup();
    } else if (type == Message::EpochEval) {
        m->evalRequest = request;
        m->tested.loss += body.value(QStringLiteral("loss_sum")).toDouble();
        m->tested.correct += cborInteger(body.value(QStringLiteral("correct")));
        m->tested.count += cborInteger(body.value(QStringLiteral("count")));
        m->testPart = {0, 0};
        maybeEpochEval();
    } else if (type == Message::Weights) {
        const qint64 index = cborInteger(body.value(QStringLiteral("index")));
        if (index == 0)
            m->weights.clear();
        m->weights.append(body.value(QStringLiteral("data")).toByteArray());
        m->weightsWhole = index + 1 == cborInteger(body.value(QStringLiteral("total")));
    } else if (type == Message::BestWeights) {
        // Chunks of the model of the epoch asked for; a late answer for an older best is dropped.
        if (cborInteger(body.value(QStringLiteral("epoch"))) != m_bestEpoch)
            return;
        const qint64 index = cborInteger(body.value(QStringLiteral("index")));
        if (index == 0)
            m_bestWeights.clear();
        m_bestWeights.append(body.value(QStringLiteral("data")).toByteArray());
        m_bestComplete = index + 1 == cborInteger(body.value(QStringLiteral("total")));
    } else if (type == Message::JobDone) {
        if (m->state == Member::State::Failed)
            return; // put out of the run (a malformed push): its stopped job says nothing
        m->state = Member::State::Done;
        if (m_ps) { // a node done early (stopped) holds nobody back
            m_ps->removeWorker(m->id);
            releaseHeldPushes();
        }
        m_result.fingerprints[m->label()] = body.value(QStringLiteral("fingerprint")).toString();
        m_result.cancelled = m_result.cancelled || body.value(QStringLiteral("cancelled")).toBool();
        maybeFinish();
    } else if (type == Message::JobFailed || type == Message::JobRefused ||
               type == Message::DataRefused) {
        memberFailed(m, body.value(QStringLiteral("message")).toString());
    } else if (type == Message::JobAccepted || type == Message::DataReceived) {
        qCDebug(lcCoordinator).noquote() << m->label() << type;
    } else {
        qCWarning(lcCoordinator).noquote() << m->label() << "sent unexpected" << type.left(32);
    }
}

void TrainingCoordinator::memberFailed(Member *m, const QString &message)
{
    note(m, ClusterEventKind::Failed, message);
    const bool wasActive = isActive(m);
    m->state = Member::State::Failed;
    if (wasActive) {
        m_groupBroken = true;
        leaveEvaluation(m);
        if (m_ps) { // nobody waits for its clock any more
            m_ps->removeWorker(m->id);
            orphanRest(m);
            releaseHeldPushes();
        }
    }
    if (m_firstFailure.isEmpty())
        m_firstFailure = QStringLiteral("%1: %2").arg(m->label(), message);
    maybeStart();
    maybeRegroup();
    maybeEpochDone();
    maybeEpochEval();
    maybeFinish();
}

void saveClusterWeights(const core::ModelSpec &spec, std::uint64_t seed,
                        const std::vector<float> &weights, const std::string &path)
{
    core::Model model(spec, seed);
    core::FlatState flat(model);
    if (flat.averagedSize() != weights.size())
        throw core::FormatError("the nodes sent " + std::to_string(weights.size()) +
                                " floats of weights, the model has " +
                                std::to_string(flat.averagedSize()));
    flat.setAveraged(weights.data());
    core::Safetensors::saveModel(model, path);
}

} // namespace edgetrain::net
