#include "workflow.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

// The Workflow's session: new, open, save (in the background or waiting), save as, the typed
// setters the pages use, the label edits of the review, and what the node registry records.

namespace edgetrain::app {

namespace {

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

// ----- session ----------------------------------------------------------------------------------

bool Workflow::newSession(const QString &dir, QString *error)
{
    if (busy() != Task::None) {
        *error = QStringLiteral("%1 is still running").arg(taskName(busy()));
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
    if (busy() != Task::None) {
        *error = QStringLiteral("%1 is still running").arg(taskName(busy()));
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
            Q_EMIT message(QStringLiteral("the labels could not be read: %1")
                               .arg(QString::fromStdString(e.what())));
        }
    }
    // What a dataset build or self-training killed before its session save left in the folder.
    if (const QString note = m_session.reconcile(m_labels.get()); !note.isEmpty())
        Q_EMIT message(note);
    restoreSession();
    return true;
}

void Workflow::restoreSession()
{
    QString error;
    if (!m_session.keyFile.isEmpty() && !m_nodes.setKeyFile(m_session.keyFile, &error))
        Q_EMIT message(error);
    for (const QString &p : QStringList(m_session.probes))
        if (!m_nodes.addProbe(p, &error))
            Q_EMIT message(error);
    m_nodes.restore(m_session.nodes);
    m_clusterPreview.reset(); // the other session's nodes
    // The kept boxes are the other session's student's: gone before its truth's change signal
    // could rescore this session with them.
    m_verifiedDetections.reset();
    if (!m_verification.open(m_session.dir, &error))
        Q_EMIT message(error);
    loadVerifiedDetections();
    Q_EMIT sessionChanged();
    Q_EMIT labelsChanged();
    Q_EMIT datasetChanged();
    Q_EMIT evaluationChanged();
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

void Workflow::saveInBackground()
{
    if (m_session.dir.isEmpty()) {
        Q_EMIT saved(false, QStringLiteral("the session has no folder yet: use Save As"));
        return;
    }
    enqueueSave(true);
}

void Workflow::enqueueSave(bool announce)
{
    // Written by the saver thread, one save after the other in order: a long run's metrics make
    // the files big, and the GUI thread does not wait for the disk. A failure is always said:
    // saved() for the user's Save, message() for the saves that go with every change.
    (void)QtConcurrent::run(&m_saver, [this, announce, snapshot = m_session] {
        QString error;
        const bool ok = snapshot.save(&error);
        if (ok && !announce)
            return;
        const QString text = ok ? QStringLiteral("session saved to %1").arg(snapshot.dir) : error;
        QMetaObject::invokeMethod(
            this,
            [this, announce, ok, text] {
                if (announce)
                    Q_EMIT saved(ok, text);
                else
                    Q_EMIT message(text);
            },
            Qt::QueuedConnection);
    });
}

bool Workflow::saveAs(const QString &dir, QString *error)
{
    const QString target = QDir(dir).absolutePath();
    if (busy() != Task::None) {
        *error = QStringLiteral("%1 is still running").arg(taskName(busy()));
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
    m_verification.moveTo(target);
    return save(error);
}

bool Workflow::changeSettings(Settings part, const std::function<void(Session &)> &edit,
                              QString *error)
{
    // Checked on the settings alone (not the run's records), written and read back the way a
    // reopened session would be.
    auto settingsOf = [](const Session &s) {
        Session only;
        only.title = s.title;
        only.capture = s.capture;
        only.dataset = s.dataset;
        only.plan = s.plan;
        only.evaluation.frames = s.evaluation.frames;
        return only;
    };
    Session settings = settingsOf(m_session);
    const QJsonObject before = settings.toJson();
    edit(settings);
    const QJsonObject after = settings.toJson();
    if (after == before)
        return true; // nothing changes: no save, no announcement
    Session reread;
    QString why;
    if (!reread.fromJson(after, &why)) {
        why = QStringLiteral("setting refused: %1").arg(why);
        if (error)
            *error = why;
        Q_EMIT message(why);
        return false;
    }
    edit(m_session);
    saveQuietly();
    Q_EMIT settingsChanged(part);
    return true;
}

void Workflow::setTitle(const QString &title)
{
    changeSettings(
        Settings::Title, [&](Session &s) { s.title = title; }, nullptr);
}

bool Workflow::setCapture(const CaptureSettings &capture, QString *error)
{
    return changeSettings(
        Settings::Capture, [&](Session &s) { s.capture = capture; }, error);
}

bool Workflow::setDatasetSettings(const DatasetSettings &dataset, QString *error)
{
    return changeSettings(
        Settings::Dataset, [&](Session &s) { s.dataset = dataset; }, error);
}

bool Workflow::setPlanSettings(const PlanSettings &plan, QString *error)
{
    const PlanSettings before = m_session.plan;
    if (!changeSettings(
            Settings::Plan, [&](Session &s) { s.plan = plan; }, error))
        return false;
    // A comparison ranked the clusters for the settings of before: it no longer says anything.
    if (m_clusterPreview && !(m_session.plan == before)) {
        m_clusterPreview.reset();
        Q_EMIT clusterPlanChanged();
    }
    return true;
}

bool Workflow::setEvaluationFrames(int frames, QString *error)
{
    return changeSettings(
        Settings::Evaluation, [&](Session &s) { s.evaluation.frames = frames; }, error);
}

void Workflow::saveQuietly()
{
    if (m_session.dir.isEmpty())
        return;
    enqueueSave(false);
}

// ----- nodes ------------------------------------------------------------------------------------

void Workflow::recordPaired(const NodeView &v)
{
    auto entry =
        std::find_if(m_session.nodes.begin(), m_session.nodes.end(),
                     [&](const SessionNode &s) { return s.host == v.host && s.port == v.port; });
    if (entry == m_session.nodes.end())
        entry = m_session.nodes.insert(m_session.nodes.end(), SessionNode{});
    entry->name = v.info.name;
    entry->host = v.host;
    entry->port = v.port;
    entry->paired = true;
    entry->arch = v.info.arch;
    entry->cpuModel = v.info.cpu_model;
    entry->cores = v.info.cores;
    entry->ramBytes = v.info.ram_bytes;
}

void Workflow::recordForgotten(const NodeView &v)
{
    std::erase_if(m_session.nodes,
                  [&](const SessionNode &s) { return s.host == v.host && s.port == v.port; });
    m_session.plan.nodes.removeAll(v.info.name);
}

void Workflow::saveLabels()
{
    if (!m_labels || m_session.dir.isEmpty())
        return;
    // A copy is written by the saver thread (a long video's labels take a while to serialise),
    // after any save queued before it. The previous file stays intact if this one fails.
    (void)QtConcurrent::run(&m_saver, [this, labels = *m_labels, dir = m_session.dir] {
        try {
            labels.save(dir.toStdString());
        } catch (const std::exception &e) {
            const QString error = QStringLiteral("the label edits could not be saved in '%1': %2")
                                      .arg(dir, QString::fromStdString(e.what()));
            QMetaObject::invokeMethod(
                this, [this, error] { Q_EMIT message(error); }, Qt::QueuedConnection);
        }
    });
}

void Workflow::editTrack(int track, const std::function<void(vision::Track &)> &edit)
{
    if (!m_labels || busy() == Task::Labelling) // labels being replaced are not edited
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
        if (std::none_of(t.boxes.begin(), t.boxes.end(), [&](const vision::TrackBox &b) {
                return b.frame >= first && b.frame <= last;
            }))
            return; // a trim to nothing would lose the track: reject it instead
        t.trim(first, last);
        t.note = "trimmed to frames " + std::to_string(first) + "-" + std::to_string(last);
    });
}

} // namespace edgetrain::app
