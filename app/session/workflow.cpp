#include "workflow.h"

#include "plannerworker.h"
#include "trainingrun.h"

#include "core/error.h"
#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "net/keyfile.h"
#include "vision/framesource.h"
#include "vision/teacher.h"
#include "vision/tracking.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>

namespace edgetrain::app {

namespace {

constexpr auto kLostAfter = std::chrono::seconds(5); // discovery silence before "lost"

QString nodeName(const QString &coordinatorLabel)
{
    const int paren = coordinatorLabel.indexOf(QLatin1String(" ("));
    return paren > 0 ? coordinatorLabel.left(paren) : coordinatorLabel;
}

QString what(const std::exception &e)
{
    return QString::fromStdString(e.what());
}

bool copyTree(const QString &from, const QString &to, QString *error)
{
    QDirIterator it(from, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString file = it.next();
        const QString target = to + QLatin1Char('/') + QDir(from).relativeFilePath(file);
        QDir().mkpath(QFileInfo(target).absolutePath());
        QFile::remove(target);
        if (!QFile::copy(file, target)) {
            *error = QStringLiteral("cannot copy '%1' to '%2'").arg(file, target);
            return false;
        }
    }
    return true;
}

} // namespace

QString nodeStateName(NodeView::State state)
{
    switch (state) {
    case NodeView::State::Found: return QStringLiteral("locked (not paired)");
    case NodeView::State::Pairing: return QStringLiteral("pairing…");
    case NodeView::State::Paired: return QStringLiteral("paired");
    case NodeView::State::Locked: return QStringLiteral("locked: key refused");
    case NodeView::State::Lost: return QStringLiteral("lost");
    }
    return {};
}

QString taskName(Task task)
{
    switch (task) {
    case Task::None: return QStringLiteral("idle");
    case Task::Labelling: return QStringLiteral("labelling");
    case Task::Dataset: return QStringLiteral("cutting the dataset");
    case Task::Training: return QStringLiteral("training");
    case Task::Evaluation: return QStringLiteral("evaluating");
    case Task::Export: return QStringLiteral("exporting");
    }
    return {};
}

Workflow::Workflow(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<PlanView>();
    qRegisterMetaType<MetricRow>();
    m_saver.setMaxThreadCount(1);
    m_planner = new PlannerWorker;
    m_planner->moveToThread(&m_plannerThread);
    connect(&m_plannerThread, &QThread::finished, m_planner, &QObject::deleteLater);
    connect(m_planner, &PlannerWorker::ready, this, [this](const PlanView &v) {
        m_planBusy = false;
        if (m_planPending) { // the user moved on: plan what they ask for now
            const PlanRequest next = *m_planPending;
            m_planPending.reset();
            requestPlan(next);
        } else {
            Q_EMIT planReady(v);
        }
    });
    m_plannerThread.setObjectName(QStringLiteral("planner"));
    m_plannerThread.start();
    m_trainThread.setObjectName(QStringLiteral("training"));
    m_trainThread.start();

    m_nodeTimer.setInterval(1000);
    connect(&m_nodeTimer, &QTimer::timeout, this, [this] {
        const QDateTime now = QDateTime::currentDateTimeUtc();
        for (auto &[key, n] : m_nodes)
            if (n.discovered && n.state == NodeView::State::Found &&
                n.lastSeen.secsTo(now) >= kLostAfter.count()) {
                n.state = NodeView::State::Lost;
                n.detail = QStringLiteral("no answer to discovery since %1")
                               .arg(n.lastSeen.toLocalTime().toString(QStringLiteral("HH:mm:ss")));
            }
        Q_EMIT nodesChanged(); // "last seen" moves on
    });
    m_nodeTimer.start();
}

Workflow::~Workflow()
{
    if (m_stop)
        m_stop->store(true);
    if (m_run)
        QMetaObject::invokeMethod(m_run, [run = m_run] { run->stop(); }, Qt::BlockingQueuedConnection);
    QThreadPool::globalInstance()->waitForDone();
    m_saver.waitForDone();
    m_plannerThread.quit();
    m_plannerThread.wait();
    if (m_run)
        m_run->deleteLater();
    m_trainThread.quit();
    m_trainThread.wait();
}

// ----- session ----------------------------------------------------------------------------------

bool Workflow::newSession(const QString &dir, QString *error)
{
    if (m_task != Task::None) {
        *error = QStringLiteral("%1 is still running").arg(taskName(m_task));
        return false;
    }
    if (QFileInfo::exists(dir + QStringLiteral("/session.json"))) {
        *error = QStringLiteral("'%1' holds a session already: open it instead").arg(dir);
        return false;
    }
    Session s;
    s.dir = QDir(dir).absolutePath();
    s.keyFile = m_session.keyFile; // the cluster stays the same
    s.probes = m_session.probes;
    s.nodes = m_session.nodes;
    if (!s.save(error))
        return false;
    m_session = s;
    m_labels.reset();
    restoreSession();
    return true;
}

bool Workflow::openSession(const QString &dir, QString *error)
{
    if (m_task != Task::None) {
        *error = QStringLiteral("%1 is still running").arg(taskName(m_task));
        return false;
    }
    auto s = Session::open(dir, error);
    if (!s)
        return false;
    m_session = std::move(*s);
    m_labels.reset();
    if (m_session.hasLabels()) {
        try {
            m_labels = std::make_shared<vision::LabelResult>(
                vision::LabelResult::load(m_session.dir.toStdString()));
        } catch (const std::exception &e) {
            Q_EMIT message(QStringLiteral("the labels could not be read: %1").arg(what(e)));
        }
    }
    restoreSession();
    return true;
}

void Workflow::restoreSession()
{
    QString error;
    if (!m_session.keyFile.isEmpty() && !setKeyFile(m_session.keyFile, &error))
        Q_EMIT message(error);
    for (const QString &p : std::as_const(m_session.probes))
        if (!addProbe(p, &error))
            Q_EMIT message(error);
    for (const SessionNode &n : m_session.nodes) {
        const QString key = QStringLiteral("%1:%2").arg(n.host).arg(n.port);
        if (!m_nodes.count(key)) {
            NodeView v;
            v.key = key;
            v.host = n.host;
            v.port = n.port;
            v.info.name = n.name;
            v.state = NodeView::State::Lost;
            v.detail = QStringLiteral("not heard from yet");
            m_nodes[key] = v;
        }
        if (n.paired && hasKey())
            pair(key);
    }
    Q_EMIT sessionChanged();
    Q_EMIT labelsChanged();
    Q_EMIT datasetChanged();
    Q_EMIT evaluationChanged();
    Q_EMIT nodesChanged();
}

bool Workflow::save(QString *error)
{
    if (m_session.dir.isEmpty()) {
        *error = QStringLiteral("the session has no folder yet: use Save As");
        return false;
    }
    m_saver.waitForDone(); // an earlier background save must not land after this one
    return m_session.save(error);
}

bool Workflow::saveAs(const QString &dir, QString *error)
{
    const QString target = QDir(dir).absolutePath();
    if (m_task != Task::None) {
        *error = QStringLiteral("%1 is still running").arg(taskName(m_task));
        return false;
    }
    if (target == m_session.dir)
        return save(error);
    if (QFileInfo::exists(target + QStringLiteral("/session.json"))) {
        *error = QStringLiteral("'%1' holds a session already").arg(target);
        return false;
    }
    if (!m_session.dir.isEmpty() && !copyTree(m_session.dir, target, error))
        return false;
    m_session.dir = target;
    return save(error);
}

void Workflow::saveQuietly()
{
    if (m_session.dir.isEmpty())
        return;
    // Written by the saver thread, one save after the other in order: a long run's metrics make
    // the files big, and the GUI thread does not wait for the disk.
    (void)QtConcurrent::run(&m_saver, [this, snapshot = m_session] {
        QString error;
        if (!snapshot.save(&error))
            QMetaObject::invokeMethod(this, [this, error] { Q_EMIT message(error); },
                                      Qt::QueuedConnection);
    });
}

// ----- nodes ------------------------------------------------------------------------------------

bool Workflow::setKeyFile(const QString &path, QString *error)
{
    QByteArray key;
    if (!net::readKeyFile(path, &key, error))
        return false;
    m_key = key;
    m_session.keyFile = QFileInfo(path).absoluteFilePath();
    return true;
}

bool Workflow::addProbe(const QString &hostPort, QString *error)
{
    QList<QPair<QString, quint16>> list;
    if (!net::parseHostPorts(hostPort, &list, error))
        return false;
    startDiscovery();
    for (const auto &[host, port] : list) {
        const QHostAddress address(host);
        if (address.isNull()) {
            *error = QStringLiteral("'%1' is not an IP address").arg(host);
            return false;
        }
        m_browser->addTarget({address, port});
        const QString text = QStringLiteral("%1:%2").arg(host).arg(port);
        if (!m_session.probes.contains(text))
            m_session.probes.append(text);
    }
    return true;
}

void Workflow::startDiscovery()
{
    if (m_browser)
        return;
    m_browser = new net::NodeBrowser(this);
    m_browser->addTarget({QHostAddress(QStringLiteral("239.255.77.77")), 45454});
    connect(m_browser, &net::NodeBrowser::nodeSeen, this, &Workflow::onNodeSeen);
    QString error;
    if (!m_browser->start(std::chrono::seconds(1), &error))
        Q_EMIT message(QStringLiteral("discovery is off: %1").arg(error));
}

void Workflow::onNodeSeen(const net::NodeInfo &info)
{
    const QString host = info.address.toString();
    const QString key = QStringLiteral("%1:%2").arg(host).arg(info.control_port);
    NodeView &n = m_nodes[key];
    const bool fresh = n.key.isEmpty();
    n.key = key;
    n.host = host;
    n.port = info.control_port;
    if (n.state != NodeView::State::Paired || n.info.id.isEmpty())
        n.info = info;
    else
        n.info.load = info.load;
    n.discovered = true;
    n.lastSeen = QDateTime::currentDateTimeUtc();
    if (n.state == NodeView::State::Lost && !m_monitors.count(key)) {
        n.state = NodeView::State::Found;
        n.detail.clear();
    }
    if (fresh)
        Q_EMIT message(QStringLiteral("found node '%1' at %2").arg(info.name, key));
    // A node the session had paired is paired again as soon as it answers.
    for (const SessionNode &s : m_session.nodes)
        if (s.host == host && s.port == n.port && s.paired && hasKey() &&
            (n.state == NodeView::State::Found))
            pair(key);
    Q_EMIT nodesChanged();
}

bool Workflow::addNode(const QString &hostPort, QString *error)
{
    QList<QPair<QString, quint16>> list;
    if (!net::parseHostPorts(hostPort, &list, error))
        return false;
    for (const auto &[host, port] : list) {
        const QString key = QStringLiteral("%1:%2").arg(host).arg(port);
        NodeView &n = m_nodes[key];
        if (n.key.isEmpty()) {
            n.key = key;
            n.host = host;
            n.port = port;
            n.info.name = host;
            n.lastSeen = QDateTime::currentDateTimeUtc();
        }
        if (hasKey())
            pair(key);
    }
    Q_EMIT nodesChanged();
    return true;
}

void Workflow::pair(const QString &key)
{
    const auto it = m_nodes.find(key);
    if (it == m_nodes.end())
        return;
    if (!hasKey()) {
        Q_EMIT message(QStringLiteral("load the cluster key first (Nodes → Cluster key)"));
        return;
    }
    if (m_monitors.count(key))
        return;
    NodeView &n = it->second;
    n.state = NodeView::State::Pairing;
    n.detail.clear();
    auto *c = new net::ControlClient(n.host, n.port, m_key, this);
    m_monitors[key] = c;
    connect(c, &net::ControlClient::ready, this, [this, key, c](const net::NodeInfo &info) {
        NodeView &v = m_nodes[key];
        const QHostAddress address = v.info.address;
        v.info = info;
        v.info.address = address;
        v.state = NodeView::State::Paired;
        v.lastSeen = QDateTime::currentDateTimeUtc();
        c->subscribeMetrics();
        auto entry = std::find_if(m_session.nodes.begin(), m_session.nodes.end(),
                                  [&](const SessionNode &s) { return s.host == v.host && s.port == v.port; });
        if (entry == m_session.nodes.end())
            entry = m_session.nodes.insert(m_session.nodes.end(), SessionNode{});
        entry->name = info.name;
        entry->host = v.host;
        entry->port = v.port;
        entry->paired = true;
        entry->arch = info.arch;
        entry->cpuModel = info.cpu_model;
        entry->cores = info.cores;
        entry->ramBytes = info.ram_bytes;
        Q_EMIT message(QStringLiteral("paired with '%1'").arg(info.name));
        Q_EMIT nodesChanged();
    });
    connect(c, &net::ControlClient::metrics, this, [this, key](const net::SystemSample &s) {
        NodeView &v = m_nodes[key];
        v.sample = s;
        v.lastSeen = QDateTime::currentDateTimeUtc();
    });
    connect(c, &net::ControlClient::failed, this, [this, key, c](const QString &reason) {
        NodeView &v = m_nodes[key];
        const bool wasPaired = v.state == NodeView::State::Paired;
        v.state = wasPaired ? NodeView::State::Lost : NodeView::State::Locked;
        if (!wasPaired && !reason.contains(QLatin1String("key")))
            v.state = NodeView::State::Lost; // not a refusal: nobody answered
        v.detail = reason;
        m_monitors.erase(key);
        c->deleteLater();
        Q_EMIT message(QStringLiteral("%1: %2").arg(v.info.name, reason));
        Q_EMIT nodesChanged();
    });
    c->connectToNode();
    Q_EMIT nodesChanged();
}

void Workflow::pairAll()
{
    for (auto &[key, n] : m_nodes)
        if (n.state == NodeView::State::Found || n.state == NodeView::State::Locked)
            pair(key);
}

void Workflow::forget(const QString &key)
{
    if (const auto m = m_monitors.find(key); m != m_monitors.end()) {
        m->second->close();
        m->second->deleteLater();
        m_monitors.erase(m);
    }
    const auto it = m_nodes.find(key);
    if (it == m_nodes.end())
        return;
    std::erase_if(m_session.nodes, [&](const SessionNode &s) {
        return s.host == it->second.host && s.port == it->second.port;
    });
    m_session.plan.nodes.removeAll(it->second.info.name);
    m_nodes.erase(it);
    Q_EMIT nodesChanged();
}

QStringList Workflow::pairedNodes() const
{
    QStringList names;
    for (const auto &[key, n] : m_nodes)
        if (n.state == NodeView::State::Paired)
            names.append(n.info.name);
    return names;
}

QString Workflow::clusterSummary() const
{
    int paired = 0, found = 0, lost = 0;
    for (const auto &[key, n] : m_nodes) {
        paired += n.state == NodeView::State::Paired;
        found += n.state == NodeView::State::Found || n.state == NodeView::State::Locked ||
                 n.state == NodeView::State::Pairing;
        lost += n.state == NodeView::State::Lost;
    }
    QString text = QStringLiteral("%1 paired · %2 locked · %3 lost").arg(paired).arg(found).arg(lost);
    if (m_task == Task::Training) {
        const auto &t = m_session.training;
        text += QStringLiteral(" · training epoch %1/%2")
                    .arg(std::min<int>(int(t.epochs.size()) + 1, m_session.plan.epochs))
                    .arg(m_session.plan.epochs);
    } else if (m_task != Task::None) {
        text += QStringLiteral(" · ") + taskName(m_task);
    }
    return text;
}

// ----- long tasks -------------------------------------------------------------------------------

void Workflow::progress(Task task, int done, int total, const QString &text)
{
    Q_EMIT taskProgress(task, done, total, text);
}

void Workflow::finishTask(Task task, bool ok, const QString &text)
{
    if (m_task == task)
        m_task = Task::None;
    m_stop.reset();
    saveQuietly();
    Q_EMIT message(text);
    Q_EMIT taskFinished(task, ok, text);
}

template<typename Work, typename Done>
void Workflow::runTask(Task task, Work work, Done done)
{
    m_task = task;
    m_stop = std::make_shared<std::atomic<bool>>(false);
    Q_EMIT taskStarted(task);
    // Progress reaches the GUI at most ~10 times a second.
    auto lastPost = std::make_shared<std::atomic<qint64>>(0);
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    auto report = [this, task, lastPost, clock](int d, int total, const QString &text) {
        const qint64 now = clock->elapsed();
        if (d < total && now - lastPost->load() < 100)
            return;
        lastPost->store(now);
        QMetaObject::invokeMethod(
            this, [this, task, d, total, text] { progress(task, d, total, text); },
            Qt::QueuedConnection);
    };
    (void)QtConcurrent::run([this, work, done, report, stop = m_stop] {
        auto result = work(report, stop.get());
        QMetaObject::invokeMethod(this, [done, result = std::move(result)]() mutable { done(result); },
                                  Qt::QueuedConnection);
    });
}

void Workflow::cancel()
{
    if (m_stop)
        m_stop->store(true);
}

void Workflow::startLabelling()
{
    if (m_task != Task::None)
        return;
    const Session s = m_session;
    if (s.capture.source.isEmpty()) {
        Q_EMIT taskFinished(Task::Labelling, false, QStringLiteral("choose a source first"));
        return;
    }
    struct Out
    {
        std::shared_ptr<vision::LabelResult> labels;
        QString error;
    };
    runTask(
        Task::Labelling,
        [s](auto report, const std::atomic<bool> *stop) {
            Out out;
            try {
                auto source = vision::FrameSource::open(s.capture.source.toStdString());
                auto teacher = vision::Teacher::create(s.capture.teacher.toStdString());
                vision::LabelOptions o;
                o.tracker = s.capture.tracker.toStdString();
                o.every = s.capture.every;
                o.max_frames = s.capture.maxFrames;
                (void)vision::createTracker(o.tracker); // a bad name fails before the work
                auto labels = std::make_shared<vision::LabelResult>(vision::Labeler::run(
                    *source, *teacher, o,
                    [&, clock = std::chrono::steady_clock::now()](int frame, int frames,
                                                                  const vision::LabelStats &st) {
                        const double seconds = std::chrono::duration<double>(
                                                   std::chrono::steady_clock::now() - clock)
                                                   .count();
                        report(frame, frames,
                               QStringLiteral("frame %1 of %2 · %3 teacher detections · %4 fps")
                                   .arg(frame)
                                   .arg(frames)
                                   .arg(st.teacher_detections)
                                   .arg(seconds > 0 ? frame / seconds : 0.0, 0, 'f', 1));
                    },
                    stop));
                labels->save(s.dir.toStdString()); // what was labelled is kept, even if cancelled
                out.labels = labels;
            } catch (const std::exception &e) {
                out.error = what(e);
            }
            return out;
        },
        [this](const Out &out) {
            if (!out.labels)
                return finishTask(Task::Labelling, false, QStringLiteral("labelling failed: ") + out.error);
            m_labels = out.labels;
            Q_EMIT labelsChanged();
            const auto &st = out.labels->stats;
            finishTask(Task::Labelling, !out.labels->cancelled,
                       QStringLiteral("%1: %2 frames, %3 tracks (%4 teacher boxes, %5 tracker-only "
                                      "boxes) in %6 s")
                           .arg(out.labels->cancelled ? QStringLiteral("labelling cancelled")
                                                      : QStringLiteral("labelled"))
                           .arg(st.frames)
                           .arg(st.tracks)
                           .arg(st.teacher_boxes)
                           .arg(st.tracker_only_boxes)
                           .arg(st.seconds, 0, 'f', 1));
        });
}

void Workflow::saveLabels()
{
    if (!m_labels || m_session.dir.isEmpty())
        return;
    // A copy is written off the GUI thread (a long video's labels take a while to serialise).
    (void)QtConcurrent::run([labels = *m_labels, dir = m_session.dir.toStdString()] {
        try {
            labels.save(dir);
        } catch (const std::exception &) {
            // The next edit or the next save tries again; the previous file stays intact.
        }
    });
}

void Workflow::editTrack(int track, const std::function<void(vision::Track &)> &edit)
{
    if (!m_labels)
        return;
    // Readers (pages, a worker) may hold the current labels: edits make a new version.
    auto edited = std::make_shared<vision::LabelResult>(*m_labels);
    for (vision::Track &t : edited->tracks)
        if (t.id == track)
            edit(t);
    edited->updateStats();
    m_labels = edited;
    saveLabels();
    Q_EMIT labelsChanged();
}

void Workflow::setTrackAccepted(int track, bool accepted)
{
    editTrack(track, [accepted](vision::Track &t) {
        t.state = accepted ? vision::Track::State::Accepted : vision::Track::State::Rejected;
        t.note = accepted ? std::string() : std::string("rejected in review");
    });
}

void Workflow::trimTrack(int track, int first, int last)
{
    if (first > last)
        return;
    editTrack(track, [first, last](vision::Track &t) {
        t.trim(first, last);
        t.note = "trimmed to frames " + std::to_string(first) + "-" + std::to_string(last);
    });
}

void Workflow::startDataset()
{
    if (m_task != Task::None)
        return;
    if (!m_labels) {
        Q_EMIT taskFinished(Task::Dataset, false, QStringLiteral("label a source first"));
        return;
    }
    struct Out
    {
        std::optional<vision::CropStats> stats;
        QString error;
    };
    runTask(
        Task::Dataset,
        [s = m_session, labels = m_labels](auto report, const std::atomic<bool> *stop) {
            Out out;
            try {
                auto source = vision::FrameSource::open(labels->source);
                vision::CropOptions o;
                o.size = cv::Size(s.dataset.width, s.dataset.height);
                o.negatives_per_positive = s.dataset.negativesPerPositive;
                o.seed = std::uint64_t(s.dataset.seed);
                const auto stats = vision::CropDataset::build(
                    s.dir.toStdString(), *labels, *source, o,
                    [&](int frame, int frames) {
                        report(frame, frames,
                               QStringLiteral("frame %1 of %2").arg(frame).arg(frames));
                    },
                    stop);
                if (!(stop && stop->load()))
                    out.stats = stats;
                else
                    out.error = QStringLiteral("cancelled (the previous dataset is unchanged)");
            } catch (const std::exception &e) {
                out.error = what(e);
            }
            return out;
        },
        [this](const Out &out) {
            if (!out.stats)
                return finishTask(Task::Dataset, false, QStringLiteral("dataset: ") + out.error);
            m_session.datasetStats = out.stats;
            Q_EMIT datasetChanged();
            const auto &st = *out.stats;
            finishTask(Task::Dataset, true,
                       QStringLiteral("dataset: %1 positive and %2 negative crops for training, "
                                      "%3 / %4 validation, %5 / %6 test")
                           .arg(st.positives[0])
                           .arg(st.negatives[0])
                           .arg(st.positives[1])
                           .arg(st.negatives[1])
                           .arg(st.positives[2])
                           .arg(st.negatives[2]));
        });
}

// ----- plan -------------------------------------------------------------------------------------

std::int64_t Workflow::deviceBatch() const
{
    const QStringList chosen = m_session.plan.nodes.isEmpty() ? pairedNodes() : m_session.plan.nodes;
    const std::int64_t n = std::max<qsizetype>(chosen.size(), 1);
    return (m_session.plan.batch + n - 1) / n;
}

PlanRequest Workflow::planRequestFor(std::int64_t budget) const
{
    PlanRequest r;
    r.model = m_session.plan.model;
    r.width = m_session.dataset.width;
    r.height = m_session.dataset.height;
    r.deviceBatch = deviceBatch();
    r.budget = budget;
    return r;
}

void Workflow::requestPlan(const PlanRequest &request)
{
    if (m_planBusy) {
        m_planPending = request;
        return;
    }
    m_planBusy = true;
    QMetaObject::invokeMethod(m_planner, [p = m_planner, request] { p->plan(request); },
                              Qt::QueuedConnection);
}

// ----- training ---------------------------------------------------------------------------------

void Workflow::startTraining()
{
    if (m_task != Task::None)
        return;
    auto refuse = [this](const QString &why) {
        Q_EMIT taskFinished(Task::Training, false, why);
    };
    if (!m_session.datasetStats)
        return refuse(QStringLiteral("cut the dataset first (step 3)"));
    if (!hasKey())
        return refuse(QStringLiteral("load the cluster key first (step 1)"));
    const auto mode = net::parseMode(m_session.plan.mode);
    if (!mode)
        return refuse(QStringLiteral("unknown mode '%1'").arg(m_session.plan.mode));
    TrainingSetup s;
    QStringList names;
    for (const auto &[key, n] : m_nodes)
        if (n.state == NodeView::State::Paired &&
            (m_session.plan.nodes.isEmpty() || m_session.plan.nodes.contains(n.info.name))) {
            s.nodes.append({n.host, n.port});
            names.append(n.info.name);
            const std::int64_t budget = m_session.plan.budgetFor(n.info.name);
            if (budget >= 0)
                s.budgets[n.info.name] = budget;
        }
    if (s.nodes.isEmpty())
        return refuse(QStringLiteral("no paired node takes part: pair nodes in step 1 and choose "
                                     "them in step 4"));
    try {
        s.spec = core::Zoo::resolve(m_session.plan.model.toStdString())
                     .withInputShape(core::Shape{3, m_session.dataset.height, m_session.dataset.width});
    } catch (const std::exception &e) {
        return refuse(what(e));
    }
    net::JobSpec &job = s.job;
    job.id = QStringLiteral("session-%1")
                 .arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-hhmmss")));
    job.mode = *mode;
    job.model = s.spec.toJson();
    job.seed = std::uint64_t(m_session.dataset.seed);
    job.epochs = m_session.plan.epochs;
    job.batch = m_session.plan.batch;
    job.lr = m_session.plan.lr;
    job.staleness = m_session.plan.staleness;
    job.local_steps = m_session.plan.localSteps;
    job.collective_timeout_ms = 5000;
    job.dataset = QStringLiteral("shipped");
    s.key = m_key;
    s.sessionDir = m_session.dir;
    s.weightsPath = m_session.path(QStringLiteral("student.safetensors"));

    m_session.training = TrainingRecord();
    m_session.training.state = TrainingRecord::State::Running;
    m_session.training.jobId = job.id;
    m_session.training.started = QDateTime::currentDateTimeUtc();
    m_session.training.nodes = names;
    m_session.evaluation.done = false;
    m_session.evaluation.result = {};
    m_task = Task::Training;
    m_trainClock.start();
    saveQuietly();
    Q_EMIT taskStarted(Task::Training);
    Q_EMIT evaluationChanged();

    m_run = new TrainingRun;
    m_run->moveToThread(&m_trainThread);
    connect(m_run, &TrainingRun::status, this, [this](const QString &text) {
        progress(Task::Training, 0, 0, text);
    });
    connect(m_run, &TrainingRun::metrics, this,
            [this](const QString &node, const net::SystemSample &sample) {
                const net::TrainingStatus st = net::TrainingStatus::fromCbor(sample.training);
                MetricRow m;
                m.seconds = double(m_trainClock.elapsed()) / 1000.0;
                m.node = nodeName(node);
                m.cpuPercent = sample.cpu_percent;
                m.memoryUsedBytes =
                    double(sample.memory_total_bytes - sample.memory_available_bytes);
                m.rxBytesPerSecond = sample.net_rx_bytes_per_second;
                m.txBytesPerSecond = sample.net_tx_bytes_per_second;
                m.phase = st.active ? st.phase : QStringLiteral("idle");
                m.epoch = st.epoch;
                m.loss = st.loss;
                m.accuracy = st.accuracy;
                m.imagesPerSecond = st.images_per_second;
                m_session.training.metrics.push_back(m);
                Q_EMIT metricsAdded(m);
            });
    connect(m_run, &TrainingRun::epoch, this, [this](const net::ClusterEpoch &e) {
        m_session.training.epochs.push_back(e);
        m_session.training.seconds = double(m_trainClock.elapsed()) / 1000.0;
        saveQuietly(); // an epoch done is never lost
        progress(Task::Training, e.epoch, m_session.plan.epochs,
                 QStringLiteral("epoch %1 of %2: loss %3, validation accuracy %4 %, %5 images/s")
                     .arg(e.epoch)
                     .arg(m_session.plan.epochs)
                     .arg(e.train_loss, 0, 'f', 4)
                     .arg(e.test_accuracy < 0 ? QStringLiteral("n/a")
                                              : QString::number(100 * e.test_accuracy, 'f', 1))
                     .arg(e.images_per_second, 0, 'f', 0));
        Q_EMIT epochFinished(e);
    });
    connect(m_run, &TrainingRun::event, this, [this](const net::ClusterEvent &e) {
        m_session.training.events.push_back(e);
        Q_EMIT clusterEvent(e);
        Q_EMIT message(QStringLiteral("%1 %2: %3").arg(nodeName(e.node), e.kind, e.message));
    });
    connect(m_run, &TrainingRun::done, this, [this](const TrainingOutcome &o) {
        auto &t = m_session.training;
        t.seconds = o.seconds;
        t.error = o.error;
        t.state = o.ok ? TrainingRecord::State::Finished
                  : o.cancelled ? TrainingRecord::State::Stopped
                                : TrainingRecord::State::Failed;
        if (o.weightsSaved)
            t.weights = QStringLiteral("student.safetensors");
        m_run->deleteLater();
        m_run = nullptr;
        const QString text =
            o.ok ? QStringLiteral("training finished: %1 epochs in %2 s")
                       .arg(t.epochs.size())
                       .arg(o.seconds, 0, 'f', 1)
            : o.cancelled ? QStringLiteral("training stopped after %1 epoch(s)").arg(t.epochs.size())
                          : QStringLiteral("training failed: %1").arg(o.error);
        finishTask(Task::Training, o.ok, text);
        // A finished run is evaluated at once: that is what the user trained for.
        if (o.ok && o.weightsSaved && m_labels)
            startEvaluation();
    });
    QMetaObject::invokeMethod(m_run, [run = m_run, s] { run->start(s); }, Qt::QueuedConnection);
}

void Workflow::stopTraining()
{
    if (m_run)
        QMetaObject::invokeMethod(m_run, [run = m_run] { run->stop(); }, Qt::QueuedConnection);
}

// ----- evaluation -------------------------------------------------------------------------------

void Workflow::startEvaluation()
{
    if (m_task != Task::None)
        return;
    if (!m_labels || m_session.training.weights.isEmpty()) {
        Q_EMIT taskFinished(Task::Evaluation, false,
                            QStringLiteral("train the student first (step 5)"));
        return;
    }
    struct Out
    {
        std::optional<vision::ViewpointEvaluation> result;
        QString error;
    };
    runTask(
        Task::Evaluation,
        [s = m_session, labels = m_labels](auto report, const std::atomic<bool> *stop) {
            Out out;
            try {
                // One core stays with the GUI (and the labeller's other work).
                core::setThreadCount(std::max(1, QThread::idealThreadCount() - 1));
                core::Model student(
                    core::Zoo::resolve(s.plan.model.toStdString())
                        .withInputShape(core::Shape{3, s.dataset.height, s.dataset.width}),
                    1);
                core::Safetensors::loadModel(student, s.path(s.training.weights).toStdString());
                auto teacher = vision::Teacher::create(s.capture.teacher.toStdString());
                auto source = vision::FrameSource::open(labels->source);
                vision::StudentDetector detector(student);
                vision::ViewpointOptions o;
                o.crops.size = cv::Size(s.dataset.width, s.dataset.height);
                o.crops.negatives_per_positive = s.dataset.negativesPerPositive;
                o.crops.seed = std::uint64_t(s.dataset.seed);
                o.eval_frames = s.evaluation.frames;
                const auto splits = vision::CropDataset::splitTracks(*labels, o.crops);
                auto e = vision::Viewpoint::evaluate(
                    *source, *teacher, detector, *labels, splits, o, stop, [&](int d, int n) {
                        report(d, n, QStringLiteral("frame %1 of %2").arg(d).arg(n));
                    });
                if (stop && stop->load())
                    out.error = QStringLiteral("cancelled");
                else
                    out.result = e;
            } catch (const std::exception &e) {
                out.error = what(e);
            }
            return out;
        },
        [this](const Out &out) {
            if (!out.result)
                return finishTask(Task::Evaluation, false, QStringLiteral("evaluation: ") + out.error);
            m_session.evaluation.done = true;
            m_session.evaluation.result = *out.result;
            Q_EMIT evaluationChanged();
            const auto &e = *out.result;
            finishTask(Task::Evaluation, true,
                       QStringLiteral("on boxes only the tracker found, the student finds %1 %, "
                                      "the teacher %2 %")
                           .arg(100 * e.student_recall_tracker_only, 0, 'f', 1)
                           .arg(100 * e.teacher_recall_tracker_only, 0, 'f', 1));
        });
}

} // namespace edgetrain::app

