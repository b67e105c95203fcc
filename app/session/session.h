#pragma once

#include "net/training/trainingcoordinator.h"
#include "vision/bootstrap.h"
#include "vision/cropdataset.h"
#include "vision/detectionmetrics.h"
#include "vision/framedataset.h"
#include "vision/operatingpoint.h"
#include "vision/viewpoint.h"

#include <QDateTime>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <vector>

namespace edgetrain::app {

/** A node the session knows: found by discovery, or typed in by address. */
struct SessionNode
{
    QString name;
    QString host;
    quint16 port = 0; // control port
    bool paired = false;
    QString arch, cpuModel;
    int cores = 0;
    std::int64_t ramBytes = 0;
};

struct CaptureSettings
{
    QString source; // a video file, an image folder, camera:N or /dev/videoN
    QString teacher = QStringLiteral("hog"); // "hog", "cascade:FILE", "onnx:FILE"
    QString tracker = QStringLiteral("kcf");
    int every = 10;    // the teacher runs on every k-th frame
    int maxFrames = 0; // 0: the whole source
};

struct DatasetSettings
{
    /** "frames": whole frames for the full-frame student (vision's FrameDataset, <session>/frames);
     *  "crops": crops for the crop classifier (vision's CropDataset, <session>/dataset). */
    QString kind = QStringLiteral("frames");
    int frameWidth = 256; // the full-frame student's input width (multiple of 8; height by aspect)
    int frameEvery = 0;   // frames: every k-th labelled frame (0: as many as 300 MB hold)
    int frameAugment = 4; // frames: jittered copies of each training frame
    int width = 24, height = 48; // the crop student's crop size
    double negativesPerPositive = 2.0;
    int seed = 1;
};

struct PlanSettings
{
    QString model =
        QStringLiteral("detector"); // the zoo's model: "detector" (full frame), "student" (crops)
    int batch = 64;
    int epochs = 8;
    double lr = 0.02;
    QString mode = QStringLiteral("sync"); // sync, async, local-sgd
    int staleness = 4;
    int localSteps = 8;
    QStringList nodes;                // names of the nodes taking part (empty: all paired)
    std::int64_t budgetAllBytes = -1; // bytes per device; -1: no budget
    std::map<QString, std::int64_t> deviceBudgetBytes; // by device name, overriding budgetAllBytes
    std::int64_t budgetBytesFor(const QString &node) const;
    // Empty: the nodes above train. Else the planner profiles them and trains on the cluster
    // that is best for this objective ("time", "power", "energy", "edp"; net::PlanObjective).
    QString clusterObjective;
    bool operator==(const PlanSettings &) const = default;
};

/** One device reading during training (from the node's metrics stream). */
struct MetricRow
{
    double seconds = 0.0; // since the run started
    QString node;
    double cpuPercent = 0.0;
    double memoryUsedBytes = 0.0;
    double rxBytesPerSecond = 0.0, txBytesPerSecond = 0.0;
    QString phase;
    int epoch = 0;
    double loss = 0.0, accuracy = 0.0, imagesPerSecond = 0.0;
    double powerWatts = -1.0;      // the device's (-1: it reports none)
    bool powerMeasured = false;    // by a sensor; else estimated from its device profile
    double energyJoules = 0.0;     // the device's running total since its agent started
    double processRssBytes = -1.0; // the node's agent, where training runs (-1: not recorded)
};

/** One node's training progress (from the node's progress messages: twice a second at most and at
 *  the end of every epoch), so the loss, accuracy and throughput curves have a point per epoch
 *  however short the run. Under sync SGD the loss and accuracy are the whole batch's. */
struct ProgressRow
{
    double seconds = 0.0; // since the run started
    QString node;
    int epoch = 0;
    std::int64_t step = 0;
    double loss = 0.0, accuracy = 0.0, imagesPerSecond = 0.0;
};

/** The cluster the planner chose for a run, the candidates it ranked, and the run's measured
 *  figures next to its prediction. */
struct ClusterPlanRecord
{
    struct Row
    {
        QStringList nodes;
        QString mode;
        double seconds = 0.0, watts = 0.0, joules = 0.0, edp = 0.0;
        QString whyNot;         // empty: it could run within the limits
        bool powerKnown = true; // false: watts, joules and EDP leave out a device without them
    };
    QString objective;
    double profilingSeconds = 0.0;
    std::vector<Row> candidates; // ranked, best first (at most kKept)
    int chosen = -1;             // index into candidates; -1: none could run
    double measuredSeconds = -1.0, measuredJoules = -1.0; // the chosen cluster's training
    static constexpr int kKept = 64;
};

struct TrainingRecord
{
    enum class State { None, Running, Finished, Stopped, Failed };
    State state = State::None;
    QString error;
    QString jobId;
    QDateTime started;
    QStringList nodes;
    std::vector<net::ClusterEpoch> epochs;
    std::vector<net::ClusterEvent> events;
    std::vector<MetricRow> metrics;
    std::vector<ProgressRow> progress;
    double seconds = 0.0;
    QString weights;   // file in the session folder, once trained
    int keptEpoch = 0; // the epoch whose weights `weights` holds when not the last (keep-best)
    double averageDecay = 0.0; // the job's moving average of the weights (0: none), see JobSpec
    std::optional<ClusterPlanRecord> plan; // the planner chose the nodes
};

/** One self-training round's figures against the verified frames (truth.json). */
struct VerifiedRound
{
    int round = 1;       // 1 = trained on the teacher/tracker labels; 2.. after self-training
    int frames = 0;      // verified (done) frames scored
    int first_frame = 0; // only verified frames >= this count (the held-out span; 0 = all)
    /** "teacher", "motion" (fixed camera only), "student", in this order; curves included. */
    std::vector<vision::DetectorScore> scores;
    /** Each score's 95 % interval (bootstrap over the frames), in the order of `scores`; empty
     *  for a round scored before intervals existed. */
    std::vector<vision::FigureIntervals> intervals;
    /** The student's lead over each baseline (a = "student"), with its interval. */
    std::vector<vision::BootstrapDifference> differences;
    int resamples = 0;      // of the bootstrap (0: none)
    std::uint64_t seed = 0; // of the bootstrap
    /** Held-out verified frames the disagreement pick chose that these figures leave out (the
     *  spread pick's frames exist); with `biased`, the figures are from those frames alone. */
    int disagreement_frames = 0;
    bool biased = false;

    /** The score named `name`, or nullptr. */
    const vision::DetectorScore *score(const std::string &name) const;
    /** Its interval, or nullptr. */
    const vision::FigureIntervals *interval(const std::string &name) const;
    /** The student's lead over `baseline`, or nullptr. */
    const vision::BootstrapDifference *lead(const std::string &baseline) const;
};

struct EvaluationRecord
{
    int frames = 40; // frames with held-out boxes the student and the teacher are compared on
    bool done = false;
    /** Against the tracker's own labels (held-out tracks): not ground truth. */
    vision::ViewpointEvaluation result;
    /** Against the verified frames, one entry per self-training round evaluated (by round,
     *  ascending); the last is the current one. Empty without verified frames. */
    std::vector<VerifiedRound> verified;
    /** detect() frames per second during the evaluation, one thread (0: not measured). */
    double student_fps = 0, teacher_fps = 0, motion_fps = 0;
    /** The full-frame student's operating threshold and how it was chosen; none before the first
     *  evaluation. */
    std::optional<vision::OperatingPoint> operatingPoint;
    /** What it was chosen against: "labels" (the session's, on its training frames) or "verified"
     *  (frames a person verified in the span the student trained on). */
    QString operatingPointAgainst = QStringLiteral("labels");
};

/** The last time the student ran on the devices' cameras (the Deploy step): each device's last
 *  report. The frames are JPEG files in the session folder (deploy/<node>.jpg). */
struct DeploymentRecord
{
    struct Device
    {
        QString node;
        QString source; // the node's camera, as the node names it
        QString frame;  // its last frame with the boxes drawn, relative to the session folder
        int frameDetections = 0; // boxes in that frame
        std::int64_t frames = 0, detections = 0;
        double fps = 0.0, latencyMsP50 = 0.0, latencyMsP95 = 0.0, cpuPercent = 0.0;
        std::int64_t rssBytes = 0;
        QString error; // why the node refused the model or dropped out (empty: it ran to the end)
    };
    QDateTime started;
    double seconds = 0.0;
    bool stopped = false; // by the user (else it ran for its duration, or failed)
    QString error;        // why it ended early, if it did
    std::vector<Device> devices;
};

const char *trainingStateName(TrainingRecord::State state);

/**
 * A session: one folder with session.json (this), labels.json (vision's Labeler), dataset/
 * (vision's CropDataset), student.safetensors, metrics.csv and the report. Every file is written
 * atomically (QSaveFile), so a crash or a full disk leaves the previous version.
 */
class Session
{
public:
    static constexpr int kFormatVersion = 1;

    QString dir;
    QString title = QStringLiteral("Viewpoint adaptation");
    QDateTime created = QDateTime::currentDateTimeUtc();
    QString keyFile;    // the cluster key's file
    QStringList probes; // unicast discovery addresses, host:port
    std::vector<SessionNode> nodes;
    CaptureSettings capture;
    DatasetSettings dataset;
    std::optional<vision::CropStats> datasetStats;       // set once a crop dataset was built
    std::optional<vision::FrameDatasetStats> frameStats; // set once a frame dataset was built
    /** The self-training round the labels are at: 1 = the teacher's and tracker's labels; each
     *  self-training pass (the student relabels the frames) adds one. */
    int round = 1;
    PlanSettings plan;
    TrainingRecord training;
    EvaluationRecord evaluation;
    /** The last deployment of the student; none until one ran. */
    std::optional<DeploymentRecord> deployment;

    QString path(const QString &file) const { return dir + QLatin1Char('/') + file; }
    bool hasLabels() const;
    /** A dataset of the kind dataset.kind was built. */
    bool hasDataset() const;

    QJsonObject toJson() const;
    /** Reads a manifest; false with a message naming the field otherwise. */
    bool fromJson(const QJsonObject &json, QString *error);

    /** Writes session.json, metrics.csv and progress.csv, each atomically; session.json counts
     *  the CSVs' rows it goes with. Killed part way, the folder reopens as this save or the one
     *  before it, never a mix, provided the rows only grew since the last save or start anew
     *  from none (as a run records them). */
    bool save(QString *error) const;
    /** Reads <dir>/session.json and the rows of metrics.csv and progress.csv it counts (all of
     *  them in sessions written before it counted them); nothing with a message otherwise. */
    static std::optional<Session> open(const QString &dir, QString *error);
    /**
     * Takes in what a dataset build or a self-training pass killed before its session.json save
     * left ahead of it, so that a reopened session is one state of its folder:
     *  - the round is the labels' when they are at a later one (self-training writes its round
     *    into labels.json before session.json);
     *  - the dataset figures are those of the dataset in the folder (a build replaces it before
     *    session.json records it), or none for a frame dataset of a later round than the
     *    session's: self-training killed between replacing the dataset and writing labels.json
     *    built it from labels that were never saved.
     * `labels`: labels.json as read (nullptr: none). A damaged index keeps session.json's
     * figures (training names the file). Returns a sentence for the user when a dataset is not
     * counted, else nothing.
     */
    QString reconcile(const vision::LabelResult *labels);

    /** The training metrics as CSV (one row per device reading). */
    QByteArray metricsCsv() const;
    /** The training progress as CSV (one row per progress message). */
    QByteArray progressCsv() const;
    /** The epochs as CSV. */
    QByteArray epochsCsv() const;
};

/** Writes `data` to `path` atomically; false with a message naming the file otherwise. */
bool writeFileAtomically(const QString &path, const QByteArray &data, QString *error);

} // namespace edgetrain::app
