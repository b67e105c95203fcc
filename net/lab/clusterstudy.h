#pragma once

#include "core/json.h"
#include "net/training/job.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edgetrain::net {

struct LabState;

/** One training job of a study: a zoo model on the first `train_limit` Fashion-MNIST images. */
struct StudyJob
{
    QString model;
    int batch = 64;
    int train_limit = 0; // 0: all 60,000
    int test_limit = 0;  // 0: all 10,000
    int epochs = 1;
};

/** One run of a study: a job trained on some of the lab's nodes in one mode, or the planner
 *  profiling every node for the job (cluster-choice). */
struct StudyRun
{
    enum class Kind { Train, Plan };
    Kind kind = Kind::Train;
    StudyJob job;
    TrainingMode mode = TrainingMode::Sync;
    QStringList nodes; // the lab's node names, in the lab's order
    /** Which measurement of this training this is: 1 the first; 2, 3, ... cluster-choice's
     *  contenders trained again (ClusterStudy::repeats). */
    int measurement = 1;
    /** Names the run uniquely within a study ("train/lenet5/b64/l8192/e2/sync/pi3b-1+pi3b-2",
     *  "/m2" after it for a second measurement): what a resumed study matches finished runs
     *  by. */
    QString key() const;
};

/** What a run left: the CLI's JSON result (train or plan --json; null when it printed none),
 *  its exit status, its wall time, and an error when it failed. */
struct StudyRecord
{
    StudyRun run;
    core::Json result;
    int exit_code = 0;
    double wall_seconds = 0.0;
    QString error;
    bool ok() const { return error.isEmpty(); }
};

/**
 * The seed papers' experiments as a study of the edge lab (`edgetrain-cli study`), and what is
 * made of their results. Pure functions of data: running the jobs is the CLI's (each run is an
 * `edgetrain-cli train|plan --json` of its own), drawing the charts and the PDF the ui's.
 *
 *  - pi-cluster: the Raspberry-Pi-cluster paper — each model trained on 1..N of the lab's nodes,
 *    synchronous against asynchronous: time per epoch, accuracy, each node's CPU, memory and
 *    network (its Tables 1-3, Figures 3-7).
 *  - cluster-choice: the heterogeneous-cluster paper — the planner's prediction for every subset
 *    of the nodes, every subset actually trained for the same job, and per objective (time,
 *    power, energy, EDP) whether the planner picked the measured best (its Figure 5).
 *
 * The records live in DIR/runs.jsonl, one JSON object a line, appended as each run ends, so an
 * interrupted study loses at most the run in progress and resumes where it stopped.
 */
class ClusterStudy
{
public:
    enum class Preset { PiCluster, ClusterChoice };
    static std::optional<Preset> parsePreset(const QString &text);
    static QString presetName(Preset preset);

    struct Options
    {
        Preset preset = Preset::PiCluster;
        std::vector<StudyJob> jobs;
        std::vector<TrainingMode> modes; // pi-cluster's; cluster-choice trains in sync
        int max_nodes = 0;               // pi-cluster: 1..max_nodes of the lab's (0: all)
        /** cluster-choice: how many times each case's pick and its closest contender are
         *  trained in all (repeats(); 1: once, as every other subset). */
        int measurements = 3;
    };
    /** The preset's jobs and modes, sized for a lab of Raspberry Pi profiles on a small machine
     *  (pi-cluster on five Pi 3s: about a quarter of an hour; cluster-choice on five devices:
     *  6 jobs x 32 runs, about an hour, not the papers' days); `quick` shrinks them to seconds
     *  (tests, a first look). */
    static Options defaults(Preset preset, bool quick = false);
    /** The devices the preset's lab has unless told ("pi3:5": the paper's cluster of Pi 3s;
     *  "pi3:2,pi4:2,pi5:1": three profiles, two link speeds). */
    static QString defaultDevices(Preset preset);

    /** The runs, in the order they run: pi-cluster per job, per mode, on the first 1..N nodes;
     *  cluster-choice per job, the plan over every node, then every non-empty subset (sync). */
    static std::vector<StudyRun> runs(const Options &options, const QStringList &nodes);
    /** cluster-choice: the runs that measure each case's two contenders again once every subset
     *  has been trained once (`records`, the study's so far): the planner's pick and the
     *  measured best (the measured second where the pick is the best), measurements 2 up to
     *  options.measurements, alternating between the subsets (all seconds, then all thirds).
     *  A subset that is a contender in several cases is trained again once. Empty for
     *  pi-cluster, for measurements 1, and for a job whose plan or subsets have not run. A
     *  failed run does not hold its job's repeats back (a subset that cannot train would hold
     *  them for good); if a resumed study runs it again and it succeeds, the contenders may
     *  change, and the earlier repeats of a subset no longer a contender are left out. */
    static std::vector<StudyRun> repeats(const Options &options,
                                         const std::vector<StudyRecord> &records);

    static core::Json recordJson(const StudyRecord &record);
    /** Throws core::FormatError naming `source` and the field. */
    static StudyRecord recordFromJson(const core::Json &json, const std::string &source);
    /** DIR/runs.jsonl's records, in file order. A last line without its newline (the study was
     *  killed while writing it) is dropped; any other bad line throws core::FormatError naming
     *  the file, line and field. A missing file is no records. */
    static std::vector<StudyRecord> readRecords(const QString &path);
    /** Appends one line and flushes it to disk (first cutting off a last line left without its
     *  newline); throws core::IoError. */
    static void appendRecord(const QString &path, const StudyRecord &record);
    /** The last record of each run (a failed run done again replaces the failure), in the
     *  order the runs first appear. */
    static std::vector<StudyRecord> latest(std::vector<StudyRecord> records);

    // --- pi-cluster ---------------------------------------------------------------------
    /** One trained configuration: the means over its epochs and over its nodes. */
    struct ScalingRow
    {
        QString model;
        int batch = 0;
        TrainingMode mode = TrainingMode::Sync;
        int devices = 0;
        int epochs = 0;
        double epoch_seconds = 0.0; // mean over the epochs (training only)
        double training_seconds = 0.0;
        double test_accuracy = -1.0; // after the last epoch (-1: not measured)
        /** The run's result had the nodes' use while it trained (`resources_by_node`; an older
         *  CLI's has none). */
        bool resources = false;
        double cpu_percent = 0.0;  // the devices' CPU use while training, mean over nodes
        double rss_mib = 0.0;      // the agents' peak RSS, mean over nodes
        double received_kib = 0.0; // per node and epoch, the agent's own traffic
        double sent_kib = 0.0;
        QString error;
    };
    struct NodeUsage
    {
        QString model;
        int batch = 0;
        TrainingMode mode = TrainingMode::Sync;
        int devices = 0;
        QString node;
        double cpu_percent = 0.0, agent_cpu_percent = 0.0;
        std::int64_t rss_peak_bytes = 0, received_bytes = 0, sent_bytes = 0;
    };
    static std::vector<ScalingRow> scaling(const std::vector<StudyRecord> &records);
    static std::vector<NodeUsage> nodeUsage(const std::vector<StudyRecord> &records);
    static QByteArray scalingCsv(const std::vector<ScalingRow> &rows);
    static QByteArray nodeUsageCsv(const std::vector<NodeUsage> &rows);

    // --- cluster-choice -----------------------------------------------------------------
    struct ChoiceRun // one subset: the planner's prediction and the measurement
    {
        QString model;
        int batch = 0;
        QStringList nodes;
        double predicted_seconds = 0, measured_seconds = 0;
        double predicted_watts = 0, measured_watts = 0;
        double predicted_joules = 0, measured_joules = 0;
        double predicted_edp = 0, measured_edp = 0;
        bool suitable = true; // the planner would consider it (memory, limits)
        int measurements = 1; // the measured figures are the first; repeats are in the cases
    };
    struct ChoiceCase // one job and objective
    {
        QString model;
        int batch = 0;
        QString objective; // time, power, energy, edp
        QStringList picked, measured_best;
        int rank = 0; // the pick's place in the measured order (1: the best; 0: not measured)
        int measured = 0;
        double picked_value = 0, best_value = 0; // the objective's measured value
        /** The pick's place among the measured configurations (1: the best; 0: not measured):
         *  subsets of alike devices (one profile, one emulation) are one configuration, their
         *  runs repeated measurements of it, its value their mean (so a pick whose own subset
         *  did not run is ranked by its configuration's other runs). Without the configurations
         *  (choice() given none) every subset is its own and this is `rank`. Fewer entries to
         *  rank make a first place likelier by chance too: `configurations` says how many. */
        int configuration_rank = 0;
        int configurations = 0; // configurations measured
        /** The case judged on the repeated measurements: the pick and its contender (the
         *  measured best, or the measured second where the pick was the best) trained
         *  `measurements` times each (repeats()); every subset's value is then the mean of its
         *  runs (most subsets have one), and the pick is the best if its mean is the lowest of
         *  all. Where it is not, it is within the spread if its runs' range (lowest to highest)
         *  overlaps the lowest mean's: some run of the pick measured at or below some run of
         *  the best. That is no statistical test, only that the runs did not separate the two
         *  (and a range widens with more runs); a subset measured once is a range of one
         *  value. */
        QStringList contender;
        int picked_measurements = 0, contender_measurements = 0;
        double picked_mean = 0, picked_low = 0, picked_high = 0;
        double contender_mean = 0, contender_low = 0, contender_high = 0;
        QStringList lowest_mean_subset; // the best on the means (the contender, or a third)
        double lowest_mean = 0, lowest_low = 0, lowest_high = 0;
        bool best_on_repeats = false; // the pick's mean the lowest of every subset's
        bool within_spread = false;   // best_on_repeats, or its runs overlap the lowest mean's
        /** How much worse than the measured best the pick measured: picked / best - 1 (0 for
         *  the best; -1 when the pick was not measured). */
        double regret() const
        {
            return rank > 0 && best_value > 0 ? picked_value / best_value - 1.0 : -1.0;
        }
    };
    struct ChoiceJob // one job's plan
    {
        QString model;
        int batch = 0;
        double profiling_seconds = 0;
        double best_training_seconds = 0; // the measured fastest subset's
    };
    struct ChoiceAnalysis
    {
        std::vector<ChoiceRun> runs;
        std::vector<ChoiceCase> cases;
        std::vector<ChoiceJob> jobs;
        int best = 0, best_or_second = 0;
        /** The same counted by configuration_rank; `by_configuration` false when choice() had
         *  no configurations or no two devices were alike (then these equal best and
         *  best_or_second). */
        int best_by_configuration = 0, best_or_second_by_configuration = 0;
        bool by_configuration = false;
        /** Judged on the repeated measurements (ChoiceCase::best_on_repeats and
         *  within_spread); `repeated`: cases whose pick or contender was measured more than
         *  once (0: the study measured every subset once, and these say the same as best). */
        int best_on_repeats = 0, best_within_spread = 0, repeated = 0;
        int measurements = 1;                             // the most runs any one subset had
        double median_time_error = 0, p90_time_error = 0; // |predicted - measured| / measured
        double median_profiling_share = 0;        // profiling / (profiling + best training time)
        double median_regret = 0, max_regret = 0; // over the cases whose pick was measured
        /** Objectives left out: power, energy and EDP need the nodes' power figures. */
        QStringList skipped;
    };
    static const QStringList &objectives(); // time, power, energy, edp
    /** Each node's configuration, alike for devices a lab emulates alike (the profile, its
     *  speed in this machine's cores, memory and link, not the per-node quota correction):
     *  name -> a description ("pi3b, 0.0973 cores, 832 MiB, 98.7 Mbit/s"). Empty for an empty
     *  lab. */
    static std::map<QString, QString> configurations(const LabState &lab);
    /** DIR/configurations.json, the study's lab's configurations kept beside its runs (the lab
     *  is gone when a later --report-only reads them): {"name": "description", ...}. read:
     *  empty if the file is absent; FormatError naming the file if it is not such an object. */
    static void writeConfigurations(const QString &path,
                                    const std::map<QString, QString> &configurations);
    static std::map<QString, QString> readConfigurations(const QString &path);
    /** `configurations`: node name -> configuration (configurations()); a node not in it is its
     *  own. Two alike boards' runs are taken to differ by the lab's noise (the study's two Pi
     *  3Bs, trained alone on one job: 6.7 and 7.9 s, predicted 6.46 and 6.37), so which
     *  measured best is treated as chance; ranking configurations, their runs averaged, judges
     *  the pick against the devices' kinds, not against one run of each twin. */
    static ChoiceAnalysis choice(const std::vector<StudyRecord> &records,
                                 const std::map<QString, QString> &configurations = {});
    static QByteArray choiceRunsCsv(const ChoiceAnalysis &analysis);
    static QByteArray choiceCasesCsv(const ChoiceAnalysis &analysis);
    static core::Json choiceSummary(const ChoiceAnalysis &analysis);
};

} // namespace edgetrain::net
