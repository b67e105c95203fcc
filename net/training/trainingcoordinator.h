#pragma once

#include "core/tensordataset.h"
#include "net/protocol/controlclient.h"
#include "net/protocol/nodeid.h"
#include "net/training/coordinator/roster.h"
#include "net/training/job.h"
#include "net/training/trainingworker.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace edgetrain::net {

class AsyncShardBook;
class BestWeightsKeeper;
class EvaluationSplitter;
class GroupFormer;
class JobSender;
class LinkProbeServer;
class MemberLink;
class ParameterServerEndpoint;
class Rejoiner;
class RendezvousHost;
struct Member;

Q_DECLARE_LOGGING_CATEGORY(lcCoordinator)

/** What happened to a node, or to the group, during a run. */
enum class ClusterEventKind {
    Lost,       // stopped answering or disconnected: dropped from the group
    Failed,     // failed or refused the job or its data, or pushed a bad gradient: out of the run
    Rejoined,   // came back and trains again from the next epoch
    Regrouped,  // a new group formed (no node: the group's event)
    Rebalanced, // batch shares moved to follow the measured speeds (the group's event)
    CollectiveFailed, // a node saw the group's collective fail (timeout, a peer gone): regroup
    /** async: a node left mid-epoch; the samples of the epoch it had not trained went to the
     *  others, so the epoch still trains every sample once (the group's event). */
    Reassigned,
};
/** Its name in logs, reports and session files: "lost", "failed", ... */
QString eventKindName(ClusterEventKind kind);
/** The kind a name stands for; nothing for a name this version does not know. */
std::optional<ClusterEventKind> eventKindFromName(const QString &name);
/** Whether the node is out of the run after this event (lost or failed), or back in it. */
inline bool takesNodeOut(ClusterEventKind kind)
{
    return kind == ClusterEventKind::Lost || kind == ClusterEventKind::Failed;
}
inline bool bringsNodeBack(ClusterEventKind kind)
{
    return kind == ClusterEventKind::Rejoined;
}

/** Something that happened to a node during a run, for the report. */
struct ClusterEvent
{
    double seconds = 0.0; // since the run started
    NodeId node;          // none for the group's events
    ClusterEventKind kind = ClusterEventKind::Lost;
    QString message;
};

/** One epoch over the whole cluster. */
struct ClusterEpoch
{
    int epoch = 0;
    double train_loss = 0.0;
    double train_accuracy = 0.0;
    double test_loss = 0.0;
    double test_accuracy = -1.0; // -1: nothing evaluated
    std::int64_t test_count = 0;
    std::int64_t samples = 0; // trained on in this epoch
    double seconds = 0.0;
    double images_per_second = 0.0;
    int nodes = 0;
    std::vector<double> shares; // of the nodes, in rank order, during the epoch
};

struct ClusterResult
{
    bool finished = false;
    bool cancelled = false;
    QString error; // empty when the run completed
    std::vector<ClusterEpoch> epochs;
    std::vector<ClusterEvent> events;
    std::vector<float> weights; // final values + float buffers (FlatState averaged layout)
    std::map<QString, QString> fingerprints;  // node -> FlatState fingerprint at its end
    int generations = 0;                      // groups formed (1 when nobody was lost)
    int max_staleness = 0;                    // async
    std::int64_t pushes = 0, held_pushes = 0; // async
    // async: each node's weights against the parameter server's mirror of them, at each
    // epoch's end (a mismatch would mean the deltas put them apart; it never should)
    std::int64_t mirror_checks = 0, mirror_mismatches = 0;
    double seconds = 0.0;
    /** With setKeepBest: the epoch whose weights `weights` holds (lowest validation loss), 0 when
     *  they are the last epoch's (no validation set, or no epoch finished). */
    int best_epoch = 0;
    /** With setPatience: the epoch after which the run ended because the validation loss had not
     *  fallen for the patience's epochs (0: it ran every epoch of the job, or was stopped). */
    int ended_early_epoch = 0;
    std::vector<NodeId> released; // not chosen by the selection: they did not train
};

/** A node that has loaded the job and profiled it, waiting to join (see setSelection). */
struct ReadyNode
{
    NodeId node;
    QCborMap ready; // its job_ready message: images_per_second, profile, sizes
};

/** Saves a run's final weights (ClusterResult::weights) as a safetensors file of `spec`'s model;
 *  throws FormatError if they do not fit the model, IoError if the file cannot be written. */
void saveClusterWeights(const core::ModelSpec &spec, std::uint64_t seed,
                        const std::vector<float> &weights, const std::string &path);

/**
 * The coordinator's side of a distributed run (edgetrain-cli and the app): sends the job (and the
 * data, if shipped) to the nodes, hosts gloo's rendezvous store and, in async mode, the parameter
 * server, holds the epoch barriers where the cluster's loss and accuracy are summed, and keeps the
 * run going when nodes are lost: a node that stops answering is dropped, the survivors get a new
 * group and continue from the last synchronised state, and a node that comes back is sent the job
 * again and joins at the next epoch. Runs on the thread that owns it; nothing blocks.
 *
 * It wires the parts in coordinator/ (the roster of members, the job sender, the group former,
 * the rendezvous host, the parameter server's endpoint, the async shard book, the evaluation
 * splitter, the best-weights keeper, the rejoiner), each reaching the nodes through their
 * MemberLinks, and dispatches each node message, read as its type (net/protocol/messages), to one
 * handler; the run's phases and the epoch's barriers are its own.
 */
class TrainingCoordinator : public QObject
{
    Q_OBJECT

public:
    TrainingCoordinator(JobSpec job, QByteArray clusterKey, QObject *parent = nullptr);
    ~TrainingCoordinator() override;

    /** Data to ship instead of a dataset the nodes have (job.dataset must be "shipped"). */
    void setData(std::shared_ptr<const core::TensorDataset> train,
                 std::shared_ptr<const core::TensorDataset> test);
    /** Whether lost nodes are called back (every second) and rejoin at the next epoch. Default on.
     */
    void setRejoin(bool rejoin) { m_rejoin = rejoin; }
    /** Per-node memory budgets (bytes, by node name) replacing the job's for those nodes. */
    void setMemoryBudgets(std::map<QString, std::int64_t> byNode) { m_budgets = std::move(byNode); }
    /** Whether the run's result keeps the weights of the epoch with the lowest validation loss
     *  rather than the last epoch's (after each new best, one node that holds the synchronised
     *  model sends it; async: the parameter server's). Default off. */
    void setKeepBest(bool keep) { m_keepBest = keep; }
    /** With setKeepBest: the run ends, finished, once this many epochs in a row have not lowered
     *  the validation loss (early stopping: the kept weights cannot change any more unless the
     *  loss comes back down). 0, the default: every epoch of the job. */
    void setPatience(int epochs) { m_patience = std::max(0, epochs); }
    /** Chooses who trains. Called once, when every node has loaded the job and profiled it and
     *  before the first group forms, with the ready nodes; returns the indices of those that
     *  train. The others are released: told to stop, never called back, listed in
     *  ClusterResult::released. None chosen ends the run there, finished, without training
     *  (a plan only). */
    using Selection = std::function<std::vector<int>(const std::vector<ReadyNode> &)>;
    void setSelection(Selection selection) { m_selection = std::move(selection); }
    /** Whether the nodes measure their link to this coordinator while they profile (a
     *  LinkProbeServer listens for the run; the job says where). Default off. */
    void setLinkProbe(bool probe) { m_linkProbe = probe; }
    /** Whether the link probes time the link's rates where the nodes' exchanges were timed over
     *  their links (JobSpec::link_rates): a plan with async needs them. Default on. */
    void setLinkRates(bool rates) { m_job.link_rates = rates; }
    /** Takes over connected, authenticated clients and starts the job on them. */
    void start(const QList<ControlClient *> &clients);
    /** The same over any links to the nodes (tests: links that record what is sent). */
    void start(std::vector<std::unique_ptr<MemberLink>> links);
    /** Asks every node to stop after its current step; finished() follows. */
    void stop();
    const ClusterResult &result() const { return m_result; }
    const JobSpec &job() const { return m_job; }

Q_SIGNALS:
    void nodeMetrics(const edgetrain::net::NodeId &node,
                     const edgetrain::net::SystemSample &sample);
    void nodeProgress(const edgetrain::net::NodeId &node,
                      const edgetrain::net::TrainingStatus &status);
    void epochFinished(const edgetrain::net::ClusterEpoch &epoch);
    /** The first group formed: training begins (loading, profiling and planning are over). */
    void trainingStarted();
    void clusterEvent(const edgetrain::net::ClusterEvent &event);
    void finished();

private:
    enum class Phase { Starting, Training, Finished };
    /** A node message's handler (one per message type). */
    using Handler = void (*)(TrainingCoordinator &, Member &, const Frame &);
    static Handler handlerFor(const QString &type);
    template <void (TrainingCoordinator::*handler)(Member &, const Frame &)>
    static void call(TrainingCoordinator &c, Member &m, const Frame &frame)
    {
        (c.*handler)(m, frame);
    }

    /** From now on the member's messages, loss and metrics come here (through its link). */
    void listen(Member &m);
    void sendJob(Member &m);
    void startLinkProbe();
    void onMessage(Member &m, const Frame &frame);
    void onLost(Member &m, const QString &reason);
    void note(const Member *m, ClusterEventKind kind, const QString &message);

    // The handlers that do more than pass a message on to a part.
    void onParameterServer(Member &m, const Frame &frame); // a pull or a push
    void onJobReady(Member &m, const Frame &frame);
    void onCollectiveFailed(Member &m, const Frame &frame);
    void onEpochDone(Member &m, const Frame &frame);
    void onEpochEval(Member &m, const Frame &frame);
    void onWeights(Member &m, const Frame &frame); // the final model's, or the best epoch's
    /** Whether a message it waits on an answer to was malformed (`error` not empty): then the
     *  member is out of the run and its job told to stop. */
    bool refused(Member &m, const Frame &frame, const QString &error);
    void onJobDone(Member &m, const Frame &frame);

    static bool isActive(const Member &m);
    void formGroup(); // a new generation from the active members and the ready joiners
    void maybeStart();
    /** With a selection: who trains; false when nobody does (the run is over). */
    bool select();
    void maybeRegroup();
    /** The participants, when every one of them waits for this (a Member::Waits); else none. */
    std::vector<Member *> atBarrier(int waits);
    void maybeEpochDone();
    void maybeEpochEval();
    /** After an epoch's figures: answers the evaluation's barrier with what comes next. */
    void nextEpoch(const ClusterEpoch &e, const std::vector<Member *> &members, bool sendsBest);
    /** async: each participant's part of the epoch's sample order; a new epoch begins. */
    void assignShards();
    /** async, at the epoch's barrier: the orphaned samples to `members` that can take them (by
     *  speed). False if nobody took any (then the epoch goes on without them). */
    bool handOutOrphans(const std::vector<Member *> &members);
    /** A member is out of the run (lost or failed) while it trained. */
    void leaveRun(Member &m);
    void maybeFinish();
    void releaseHeldPushes();
    /** A member's job failed (or it broke the protocol): out of the run, the others go on. */
    void memberFailed(Member &m, const QString &message);
    /** Every barrier a change of members may have completed. */
    void advance();
    void finish(const QString &error);

    JobSpec m_job;
    QByteArray m_key;
    std::map<QString, std::int64_t> m_budgets;
    bool m_rejoin = true;
    Phase m_phase = Phase::Starting;
    bool m_stopping = false;
    bool m_groupBroken = false;
    int m_epoch = 1; // the epoch being trained
    Roster m_members;
    Rejoiner *m_rejoiner; // a child
    QElapsedTimer m_clock;
    Selection m_selection;
    bool m_linkProbe = false;
    std::unique_ptr<LinkProbeServer> m_probeServer;
    bool m_selected = false;
    bool m_keepBest = false;
    int m_patience = 0;
    bool m_endingEarly = false;
    QString m_firstFailure; // a node's own words, for a run that ends with nobody left
    ClusterResult m_result;
    // The parts. The rendezvous host joins its exchange probes' thread when destroyed: before
    // QObject's destructor, so what that thread posts arrives or is dropped with the object.
    std::unique_ptr<RendezvousHost> m_rendezvous;
    std::unique_ptr<ParameterServerEndpoint> m_ps; // async only
    std::unique_ptr<AsyncShardBook> m_shards;
    std::unique_ptr<EvaluationSplitter> m_evaluation;
    std::unique_ptr<BestWeightsKeeper> m_best;
    std::unique_ptr<JobSender> m_sender;
    std::unique_ptr<GroupFormer> m_groups; // from start()
};

} // namespace edgetrain::net

Q_DECLARE_METATYPE(edgetrain::net::ClusterEpoch)
Q_DECLARE_METATYPE(edgetrain::net::ClusterEvent)
Q_DECLARE_METATYPE(edgetrain::net::TrainingStatus)
