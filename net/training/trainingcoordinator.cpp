#include "net/training/trainingcoordinator.h"

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/coordinator/asyncshardbook.h"
#include "net/training/coordinator/bestweightskeeper.h"
#include "net/training/coordinator/epochfigures.h"
#include "net/training/coordinator/evaluationsplitter.h"
#include "net/training/coordinator/groupformer.h"
#include "net/training/coordinator/jobsender.h"
#include "net/training/coordinator/member.h"
#include "net/training/coordinator/memberlink.h"
#include "net/training/coordinator/parameterserverendpoint.h"
#include "net/training/coordinator/rejoiner.h"
#include "net/training/coordinator/rendezvoushost.h"
#include "net/training/coordinator/roster.h"
#include "net/training/linkprobe.h"
#include "net/training/parameterserver.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcCoordinator, "edgetrain.coordinator")

TrainingCoordinator::TrainingCoordinator(JobSpec job, QByteArray clusterKey, QObject *parent)
    : QObject(parent), m_job(std::move(job)), m_key(std::move(clusterKey)),
      m_rendezvous(std::make_unique<RendezvousHost>()),
      m_shards(std::make_unique<AsyncShardBook>()),
      m_evaluation(std::make_unique<EvaluationSplitter>()),
      m_best(std::make_unique<BestWeightsKeeper>()), m_sender(std::make_unique<JobSender>())
{
    qRegisterMetaType<ClusterEpoch>();
    qRegisterMetaType<ClusterEvent>();
    qRegisterMetaType<TrainingStatus>();
    // Lost nodes are called back while the run trains; one that answers joins at the next epoch.
    auto lost = [this] {
        const bool takesBack = m_rejoin && !m_stopping && m_phase == Phase::Training;
        return takesBack ? m_members.inState(Member::State::Lost) : std::vector<Member *>{};
    };
    auto answered = [this](Member &m, ControlClient *client) {
        if (m_phase != Phase::Training || m_stopping) {
            client->deleteLater();
            return;
        }
        note(&m, ClusterEventKind::Rejoined,
             QStringLiteral("answering again: sent the job, joins at the next epoch"));
        m.node.name = client->node().name;
        m.link = std::make_unique<ClientLink>(client);
        listen(m);
        sendJob(m);
    };
    m_rejoiner = new Rejoiner(m_key, lost, answered, this);
}

TrainingCoordinator::~TrainingCoordinator() = default;

void TrainingCoordinator::setData(std::shared_ptr<const core::TensorDataset> train,
                                  std::shared_ptr<const core::TensorDataset> test)
{
    m_sender->setData(train, test);
    m_job.dataset = QStringLiteral("shipped");
    m_job.train_shipment = m_job.id + QStringLiteral("-train");
    m_job.test_shipment = test ? m_job.id + QStringLiteral("-test") : QString();
}

void TrainingCoordinator::start(const QList<ControlClient *> &clients)
{
    std::vector<std::unique_ptr<MemberLink>> links;
    for (ControlClient *client : clients) {
        client->setParent(this);
        links.push_back(std::make_unique<ClientLink>(client));
    }
    start(std::move(links));
}

void TrainingCoordinator::start(std::vector<std::unique_ptr<MemberLink>> links)
{
    m_clock.start();
    m_best->setKeep(m_keepBest);
    m_best->setPatience(m_patience);
    m_groups = std::make_unique<GroupFormer>(m_job, m_budgets);
    m_sender->setBudgets(m_budgets);
    if (m_linkProbe)
        startLinkProbe();
    if (m_job.mode == TrainingMode::Async)
        m_ps = std::make_unique<ParameterServerEndpoint>(m_job);
    for (auto &link : links) {
        Member &member = m_members.add(std::move(link));
        listen(member);
        sendJob(member);
    }
    m_rendezvous->start();
    if (m_members.empty())
        finish(QStringLiteral("no nodes to train on"));
}

void TrainingCoordinator::startLinkProbe()
{
    m_probeServer = std::make_unique<LinkProbeServer>();
    if (!m_probeServer->listen()) {
        qCWarning(lcCoordinator).noquote()
            << "the link probe cannot listen:" << m_probeServer->errorString();
        return;
    }
    m_job.link_probe_port = m_probeServer->port();
    m_job.link_probe_token = QString::fromLatin1(m_probeServer->token());
    m_job.link_probe_turns = true;
    // The profiles time their exchange against a rank of ours during their link turn.
    m_rendezvous->hostExchangeProbes(std::chrono::milliseconds(m_job.exchangeProbeTimeoutMs()));
    m_job.exchange_probe = true;
}

void TrainingCoordinator::listen(Member &m)
{
    Member *member = &m; // members live as long as the coordinator
    m.link->listen(
        {[this, member](const Frame &f) { onMessage(*member, f); },
         [this, member](const QString &reason) { onLost(*member, reason); },
         [this, member](const SystemSample &s) { Q_EMIT nodeMetrics(member->node, s); }});
}

void TrainingCoordinator::sendJob(Member &m)
{
    m.state = Member::State::Starting;
    m.forgetRequest();
    m_sender->send(*m.link, m_job, m_members.links());
}

void TrainingCoordinator::note(const Member *m, ClusterEventKind kind, const QString &message)
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

bool TrainingCoordinator::isActive(const Member &m)
{
    return m.state == Member::State::Training;
}

// ---- the message handlers

TrainingCoordinator::Handler TrainingCoordinator::handlerFor(const QString &type)
{
    // One handler per message type; those that only pass the message on are written here.
    using C = TrainingCoordinator;
    const Handler store = [](C &c, Member &m, const Frame &f) {
        c.m_rendezvous->request(m.id, *m.link, f);
    };
    const Handler failed = [](C &c, Member &m, const Frame &f) {
        c.memberFailed(m, Failure::fromCbor(f.body).message);
    };
    const Handler acknowledged = [](C &, Member &m, const Frame &f) {
        qCDebug(lcCoordinator).noquote() << m.label() << f.type;
    };
    static const std::map<QString, Handler> handlers{
        {Message::StoreSet, store},
        {Message::StoreGet, store},
        {Message::StoreWait, store},
        {Message::ExchangeProbe,
         [](C &c, Member &m, const Frame &f) {
             c.m_rendezvous->exchangeProbe(m.id, *m.link, f, m.label());
         }},
        {Message::Progress,
         [](C &c, Member &m, const Frame &f) {
             Q_EMIT c.nodeProgress(m.node, TrainingStatus::fromCbor(f.body));
         }},
        {Message::PsPull, &C::call<&C::onParameterServer>},
        {Message::PsPush, &C::call<&C::onParameterServer>},
        {Message::JobReady, &C::call<&C::onJobReady>},
        {Message::CollectiveFailed, &C::call<&C::onCollectiveFailed>},
        {Message::EpochDone, &C::call<&C::onEpochDone>},
        {Message::EpochEval, &C::call<&C::onEpochEval>},
        {Message::Weights, &C::call<&C::onWeights>},
        {Message::BestWeights, &C::call<&C::onWeights>},
        {Message::JobDone, &C::call<&C::onJobDone>},
        {Message::JobFailed, failed},
        {Message::JobRefused, failed},
        {Message::DataRefused, failed},
        {Message::JobAccepted, acknowledged},
        {Message::DataReceived, acknowledged},
    };
    if (const auto it = handlers.find(type); it != handlers.end())
        return it->second;
    // Any other store request is the rendezvous host's to refuse, with its reason.
    return type.startsWith(QLatin1String("store_")) ? store : nullptr;
}

void TrainingCoordinator::onMessage(Member &m, const Frame &frame)
{
    if (m.released) {
        // Not chosen: its job ends with the stop it was given; nothing it sends counts.
        if (frame.type == Message::JobDone || frame.type == Message::JobFailed)
            m.state = Member::State::Done;
        return;
    }
    if (const Handler handler = handlerFor(frame.type))
        handler(*this, m, frame);
    else
        qCWarning(lcCoordinator).noquote() << m.label() << "sent unexpected" << frame.type.left(32);
}

void TrainingCoordinator::onParameterServer(Member &m, const Frame &frame)
{
    if (!m_ps || m_stopping || !isActive(m))
        return m.link->reply(RequestId::of(frame.body), stopReply());
    if (frame.type == Message::PsPull) {
        m_ps->pull(m, RequestId::of(frame.body));
    } else {
        QString error;
        const auto push = GradientPush::fromCbor(frame.body, &error);
        const auto outcome = push ? m_ps->push(m, RequestId::of(frame.body), *push)
                                  : ParameterServerEndpoint::PushOutcome{true, 0};
        if (outcome.malformed) {
            if (!push) // refused before it reached the server: stopped here
                m.link->reply(RequestId::of(frame.body), stopReply());
            return memberFailed(m, QStringLiteral("sent a malformed gradient push"));
        }
        m_shards->applied(m.id, outcome.samples);
    }
    releaseHeldPushes();
}

bool TrainingCoordinator::refused(Member &m, const Frame &frame, const QString &error)
{
    if (error.isEmpty())
        return false;
    // It broke the protocol: out of the run, its job told to stop.
    m.link->reply(RequestId::of(frame.body), stopReply());
    memberFailed(m, QStringLiteral("sent a malformed %1: %2").arg(frame.type, error));
    return true;
}

void TrainingCoordinator::onJobReady(Member &m, const Frame &frame)
{
    QString error;
    const auto ready = JobReady::fromCbor(frame.body, &error);
    if (refused(m, frame, error))
        return;
    m.ready = *ready;
    m.readyBody = frame.body;
    m.speed = m.ready.images_per_second;
    m.wait(Member::Waits::Start, RequestId::of(frame.body));
    m.state = Member::State::Ready;
    if (m_phase == Phase::Training && m_stopping)
        m.answer(Member::Waits::Start, stopReply());
    maybeStart(); // a joiner in a running job waits for the next epoch
}

void TrainingCoordinator::onCollectiveFailed(Member &m, const Frame &frame)
{
    QString error;
    const auto failed = CollectiveFailed::fromCbor(frame.body, &error);
    if (!m_groupBroken)
        note(&m, ClusterEventKind::CollectiveFailed, failed ? failed->message : error);
    m_groupBroken = true;
    m.wait(Member::Waits::Regroup, RequestId::of(frame.body));
    maybeRegroup();
}

void TrainingCoordinator::onEpochDone(Member &m, const Frame &frame)
{
    QString error;
    const auto done = EpochDone::fromCbor(frame.body, &error);
    if (refused(m, frame, error))
        return;
    m.wait(Member::Waits::EpochEnd, RequestId::of(frame.body));
    m.epoch = *done;
    if (m_ps) {
        m_ps->epochDone(m, *done);
        releaseHeldPushes();
    }
    maybeEpochDone();
    maybeRegroup();
}

void TrainingCoordinator::onEpochEval(Member &m, const Frame &frame)
{
    QString error;
    const auto evaluated = EpochEval::fromCbor(frame.body, &error);
    if (refused(m, frame, error))
        return;
    m.wait(Member::Waits::Evaluation, RequestId::of(frame.body));
    m_evaluation->reported(m.id, *evaluated);
    maybeEpochEval();
}

void TrainingCoordinator::onWeights(Member &m, const Frame &frame)
{
    QString error;
    const auto chunk = WeightsChunk::fromCbor(frame.body, &error);
    if (!chunk) { // the model does not come whole from it: another rank's, or none
        qCWarning(lcCoordinator).noquote()
            << m.label() << "sent a malformed" << frame.type << error;
        return;
    }
    if (frame.type == Message::BestWeights)
        m_best->received(*chunk);
    else
        m.weights.add(*chunk);
}

void TrainingCoordinator::onJobDone(Member &m, const Frame &frame)
{
    if (m.state == Member::State::Failed)
        return; // put out of the run (a malformed push): its stopped job says nothing
    m.state = Member::State::Done;
    if (m_ps) { // a node done early (stopped) holds nobody back
        m_ps->leave(m.id);
        releaseHeldPushes();
    }
    QString error;
    const JobDone done = JobDone::fromCbor(frame.body, &error).value_or(JobDone{});
    if (!error.isEmpty())
        qCWarning(lcCoordinator).noquote()
            << m.label() << "sent a malformed" << frame.type << error;
    m_result.fingerprints[m.label()] = done.fingerprint;
    m_result.cancelled = m_result.cancelled || done.cancelled;
    maybeFinish();
}

// ---- groups and barriers

void TrainingCoordinator::formGroup()
{
    std::vector<Member *> members = m_members.participants();
    for (Member *joiner : m_members.inState(Member::State::Ready))
        members.push_back(joiner);
    ++m_result.generations;
    const QString names = m_groups->form(members);
    const int generation = m_groups->generation();
    m_rendezvous->beginGeneration(generation);
    m_groupBroken = false;
    if (generation > 0)
        note(nullptr, ClusterEventKind::Regrouped,
             QStringLiteral("%1 %2 in group %3: %4")
                 .arg(members.size())
                 .arg(members.size() == 1 ? QStringLiteral("node") : QStringLiteral("nodes"))
                 .arg(generation)
                 .arg(names));
    else
        qCInfo(lcCoordinator).noquote() << "group 0:" << names;
    // Joiners start now, with the group.
    for (Member *m : members) {
        if (m->state != Member::State::Ready)
            continue;
        m->state = Member::State::Training;
        if (m_ps)
            m_ps->join(m->id);
        m->answer(Member::Waits::Start, m_groups->startReply(*m, m_epoch));
    }
}

void TrainingCoordinator::maybeStart()
{
    if (m_phase != Phase::Starting)
        return;
    if (m_members.any(Member::State::Starting))
        return; // still loading or calibrating
    const std::vector<Member *> ready = m_members.inState(Member::State::Ready);
    if (ready.empty())
        return finish(QStringLiteral("no node could start the job"));
    if (m_stopping) {
        for (Member *m : ready)
            m->answer(Member::Waits::Start, stopReply());
        return finish(QString());
    }
    if (m_selection && !m_selected && !select())
        return finish(QString()); // a plan only: nobody trains
    m_phase = Phase::Training;
    formGroup();
    assignShards();
    m_rejoiner->start();
    Q_EMIT trainingStarted();
}

bool TrainingCoordinator::select()
{
    m_selected = true;
    const std::vector<Member *> waiting = m_members.inState(Member::State::Ready);
    std::vector<ReadyNode> nodes;
    for (const Member *m : waiting)
        nodes.push_back({m->node, m->readyBody});
    const std::vector<int> keep = m_selection(nodes);
    m_probeServer.reset();     // every node has measured its link
    m_job.link_probe_port = 0; // a node that rejoins later does not probe a closed port
    for (std::size_t i = 0; i < waiting.size(); ++i) {
        if (std::find(keep.begin(), keep.end(), int(i)) != keep.end())
            continue;
        Member *m = waiting[i];
        m->answer(Member::Waits::Start, stopReply());
        m->released = true;
        m->state = Member::State::Done;
        m_result.released.push_back(m->node);
    }
    return std::any_of(waiting.begin(), waiting.end(),
                       [](const Member *m) { return m->state == Member::State::Ready; });
}

void TrainingCoordinator::maybeRegroup()
{
    if (m_phase != Phase::Training || m_job.mode == TrainingMode::Async || !m_groupBroken)
        return;
    const auto members = m_members.participants();
    if (members.empty())
        return maybeFinish();
    // Each waits with its collective's failure, or at the epoch's end it reached anyway.
    auto regrouping = [](const Member *m) {
        return m->waits(Member::Waits::Regroup) || m->waits(Member::Waits::EpochEnd);
    };
    if (!std::all_of(members.begin(), members.end(), regrouping))
        return; // still running into the failure (or its collective's timeout)
    if (m_stopping) {
        for (Member *m : members)
            m->answerAny(stopReply());
        return;
    }
    formGroup();
    for (Member *m : m_members.participants()) {
        if (!regrouping(m))
            continue;
        m->answerAny(m_groups->regroupReply(*m));
        m->epoch = {};
    }
}

std::vector<Member *> TrainingCoordinator::atBarrier(int waits)
{
    if (m_phase != Phase::Training)
        return {};
    const auto members = m_members.participants();
    if (members.empty()) {
        maybeFinish();
        return {};
    }
    for (Member *m : members)
        if (!m->waits(Member::Waits(waits)))
            return {};
    return members;
}

void TrainingCoordinator::maybeEpochDone()
{
    const auto members = atBarrier(int(Member::Waits::EpochEnd));
    if (members.empty())
        return;
    if (m_groupBroken && m_job.mode != TrainingMode::Async)
        return maybeRegroup();
    if (m_ps && m_shards->hasOrphans() && !m_stopping && handOutOrphans(members))
        return; // they end the epoch again when they have trained them
    // Evaluation: the test set split by speed among the nodes at the barrier.
    m_evaluation->split(members, m_stopping, m_ps ? m_ps->resultBytes() : QByteArray());
    if (m_stopping)
        for (Member *m : members)
            m->epoch = {};
}

void TrainingCoordinator::maybeEpochEval()
{
    const auto members = atBarrier(int(Member::Waits::Evaluation));
    if (members.empty())
        return;
    // A node lost while evaluating took its part of the test set with it: the epoch's figures
    // would be of the rest, and the model (the weights a run saves) would not score them on
    // the whole test set. The others evaluate that part on the same model first.
    if (m_evaluation->hasUntested() && !m_stopping &&
        m_evaluation->handOutUntested(members, m_epoch))
        return; // they report again when they have evaluated it
    std::vector<EpochDone> reports;
    std::vector<int> ids;
    for (Member *m : members) {
        reports.push_back(m->epoch);
        ids.push_back(m->id);
        if (m->epoch.compute_images_per_second > 0)
            m->speed = m->epoch.compute_images_per_second;
    }
    // async: what members lost in this epoch had trained (their pushes were applied) counts
    // too; the loss and accuracy are of the samples whose figures reached us.
    ClusterEpoch e = epochFigures(m_epoch, reports, m_evaluation->total(ids),
                                  m_ps ? m_shards->lostApplied() : 0);
    e.shares = m_groups->shares();
    // Keep-best: a new lowest validation loss asks for this epoch's model (every member at the
    // barrier holds the same one; the parameter server holds it in async mode).
    bool sendsBest = false;
    if (m_best->improves(e.test_count, e.test_loss)) {
        m_best->keep(e.epoch, e.test_loss, m_ps ? m_ps->resultBytes() : QByteArray());
        sendsBest = !m_ps;
    }
    m_result.epochs.push_back(e);
    Q_EMIT epochFinished(e);
    ++m_epoch;
    nextEpoch(e, members, sendsBest);
}

void TrainingCoordinator::nextEpoch(const ClusterEpoch &e, const std::vector<Member *> &members,
                                    bool sendsBest)
{
    // The next epoch: a new group if someone was lost or is waiting to join, or if the measured
    // speeds moved a share by more than 10 %.
    const bool joiners = m_members.any(Member::State::Ready);
    const bool rebalance = m_groups->wantsRebalance(members);
    // Early stopping: the patience's epochs without a new lowest validation loss end the run here,
    // finished, with the kept epoch's weights.
    if (!m_stopping && m_epoch <= m_job.epochs && m_best->patienceRanOut(e.epoch)) {
        m_endingEarly = true;
        m_result.ended_early_epoch = e.epoch;
        qCInfo(lcCoordinator).noquote()
            << QStringLiteral("no lower validation loss in %1 epochs since epoch %2: the run ends "
                              "after epoch %3 of %4")
                   .arg(m_best->patience())
                   .arg(m_best->bestEpoch())
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
    const Member *bestSender = sendsBest ? members.front() : nullptr;
    for (Member *m : m_members.participants()) {
        TrainingReply answer;
        answer.action = m_stopping      ? ReplyAction::Stop
                        : m_endingEarly ? ReplyAction::Finish
                                        : ReplyAction::Continue;
        if (m->waits(Member::Waits::Evaluation) && regroup)
            answer.next_group = m_groups->groupOf(*m);
        if (m == bestSender)
            m_best->askForWeights(answer);
        m->answer(Member::Waits::Evaluation, answer.toCbor());
        m->epoch = {};
    }
    m_evaluation->endEpoch();
    if (!last && !m_stopping)
        assignShards();
}

// ---- async: shards and held pushes

void TrainingCoordinator::assignShards()
{
    const auto members = m_members.participants(); // rank order
    if (!m_ps || members.empty() || members.size() != m_groups->shares().size())
        return m_shards->clear();
    std::vector<int> ids;
    for (const Member *m : members)
        ids.push_back(m->id);
    m_shards->assign(ids, members.front()->ready.train_samples, m_groups->shares());
}

bool TrainingCoordinator::handOutOrphans(const std::vector<Member *> &members)
{
    const AsyncShardBook::Handed handed = m_shards->handOut(members, m_epoch);
    if (handed.takers.empty())
        return false;
    for (const Member *m : handed.takers)
        m_ps->setRunning(m->id, true); // back from the barrier: its clock counts again
    note(nullptr, ClusterEventKind::Reassigned, handed.summary);
    return true;
}

void TrainingCoordinator::releaseHeldPushes()
{
    if (m_ps)
        m_ps->releaseHeld(m_members.inState(Member::State::Training)); // in the order they joined
}

// ---- the end, and members leaving

void TrainingCoordinator::maybeFinish()
{
    if (m_phase == Phase::Finished)
        return;
    if (m_phase == Phase::Starting)
        return maybeStart();
    if (m_members.any(Member::State::Training))
        return;
    for (Member *m : m_members.inState(Member::State::Ready))
        m->answer(Member::Waits::Start, stopReply());
    bool anyDone = false; // a node that trained to the end (a released one never trained)
    for (const Member *m : m_members.inState(Member::State::Done))
        anyDone = anyDone || !m->released;
    finish(anyDone ? QString() : QStringLiteral("every node was lost or failed"));
}

void TrainingCoordinator::finish(const QString &error)
{
    if (m_phase == Phase::Finished)
        return;
    m_phase = Phase::Finished;
    m_rejoiner->stop();
    m_rendezvous->stop();
    m_result.finished = error.isEmpty();
    m_result.error = error.isEmpty() || m_firstFailure.isEmpty()
                         ? error
                         : error + QStringLiteral(" - ") + m_firstFailure;
    m_result.cancelled = m_result.cancelled || m_stopping;
    m_result.seconds = double(m_clock.elapsed()) / 1000.0;
    if (m_ps)
        m_ps->report(m_result);
    else
        m_result.weights = lastGroupWeights(m_members.all());
    // The best epoch's model instead of the last, when it arrived whole and has the same size.
    if (const int best = m_best->apply(m_result.weights))
        m_result.best_epoch = best;
    for (const auto &m : m_members.all())
        if (m->link && (m->state == Member::State::Training || m->state == Member::State::Starting))
            m->link->send(Message::Stop); // a joiner still loading need not finish
    qCInfo(lcCoordinator).noquote()
        << "run finished" << (error.isEmpty() ? QStringLiteral("") : error);
    Q_EMIT finished();
}

void TrainingCoordinator::stop()
{
    if (m_phase == Phase::Finished || m_stopping)
        return;
    m_stopping = true;
    for (const auto &m : m_members.all()) {
        if (m->link && (m->state == Member::State::Training || m->state == Member::State::Starting))
            m->link->send(Message::Stop);
        if (m->state == Member::State::Ready && m_phase == Phase::Training) {
            m->answer(Member::Waits::Start, stopReply());
            m->state = Member::State::Done;
        }
        m->answer(Member::Waits::Push, stopReply());
    }
    advance();
}

void TrainingCoordinator::advance()
{
    maybeStart();
    maybeRegroup();
    maybeEpochDone();
    maybeEpochEval();
    maybeFinish();
}

void TrainingCoordinator::leaveRun(Member &m)
{
    m_groupBroken = true; // async: the next epoch's shares leave it out
    m_evaluation->leave(m.id);
    if (m_ps) { // nobody waits for its clock any more
        m_ps->leave(m.id);
        m_shards->orphanRest(m.id);
        releaseHeldPushes();
    }
}

void TrainingCoordinator::onLost(Member &m, const QString &reason)
{
    m_rendezvous->forget(m.id); // before its link goes: the host answers through it
    m.link.reset();
    m.connecting = false;
    if (m_phase == Phase::Finished || m.state == Member::State::Lost)
        return;
    const bool wasActive = isActive(m);
    if (m.state == Member::State::Done || m.state == Member::State::Failed)
        return;
    m.state = Member::State::Lost;
    note(&m, ClusterEventKind::Lost, reason);
    m.forgetRequest();
    if (wasActive)
        leaveRun(m);
    advance();
}

void TrainingCoordinator::memberFailed(Member &m, const QString &message)
{
    note(&m, ClusterEventKind::Failed, message);
    const bool wasActive = isActive(m);
    m.state = Member::State::Failed;
    if (wasActive)
        leaveRun(m);
    if (m_firstFailure.isEmpty())
        m_firstFailure = QStringLiteral("%1: %2").arg(m.label(), message);
    advance();
}

} // namespace edgetrain::net
