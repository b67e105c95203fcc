// Workflow: the verified figures following the truth between evaluations.

#include "disagreement.h"
#include "workflow.h"

#include <QDir>
#include <QFile>

namespace edgetrain::app {

VerifiedEnough Workflow::verifiedEnough() const
{
    const auto &rounds = m_session.evaluation.verified;
    if (rounds.empty() || !m_verifiedDetections ||
        rounds.back().round != m_verifiedDetections->round)
        return {};
    const QString objects = m_verification.truth().category == "person" ? QStringLiteral("people")
                                                                        : QStringLiteral("objects");
    return app::verifiedEnough(rounds.back(),
                               pendingVerifiedFrames(m_verification.truth(), *m_verifiedDetections),
                               objects);
}

void Workflow::loadVerifiedDetections()
{
    m_verifiedDetections.reset();
    QString error;
    auto kept = VerifiedDetections::load(m_session.dir, &error);
    if (!error.isEmpty()) {
        Q_EMIT message(QStringLiteral("the kept detections are unreadable (evaluate again to "
                                      "score newly verified frames): ") +
                       error);
        return;
    }
    // Another round's boxes, or boxes from before the weights changed, score nothing now.
    if (kept && kept->round == m_session.round && m_session.evaluation.done)
        m_verifiedDetections = std::move(kept);
}

void Workflow::rescoreVerified()
{
    if (!m_verifiedDetections || busy() == Task::Evaluation)
        return;
    applyVerifiedRound();
    saveQuietly();
    Q_EMIT evaluationChanged();
}

void Workflow::applyVerifiedRound()
{
    if (!m_verifiedDetections)
        return;
    auto &rounds = m_session.evaluation.verified;
    VerifiedRound v = scoreVerified(m_verification.truth(), *m_verifiedDetections);
    const auto at = std::find_if(rounds.begin(), rounds.end(),
                                 [&](const VerifiedRound &r) { return r.round == v.round; });
    if (v.frames == 0) {
        if (at != rounds.end())
            rounds.erase(at); // no verified frame left among the kept ones
    } else if (at != rounds.end()) {
        *at = std::move(v);
    } else {
        rounds.insert(std::find_if(rounds.begin(), rounds.end(),
                                   [&](const VerifiedRound &r) { return r.round > v.round; }),
                      std::move(v));
    }
}

void Workflow::dropVerifiedDetections()
{
    m_verifiedDetections.reset();
    QFile::remove(QDir(m_session.dir).filePath(QLatin1String(VerifiedDetections::kFile)));
}

QString Workflow::disagreementBlocker() const
{
    if (busy() != Task::None)
        return QStringLiteral("wait for %1 to finish").arg(taskName(busy()));
    if (m_session.dataset.kind == QLatin1String("crops"))
        return QStringLiteral("the crop student has no frames to compare: use the full-frame one");
    if (!m_labels || m_session.training.weights.isEmpty())
        return QStringLiteral("train the student first (step 6): the pick compares it with the "
                              "teacher, motion and the tracker");
    return {};
}

void Workflow::startDisagreementPick(int count, int sourceFrames, cv::Size frameSize)
{
    if (const QString why = disagreementBlocker(); !why.isEmpty()) {
        Q_EMIT taskFinished(Task::DisagreementPick, false, why);
        return;
    }
    std::vector<int> kept;
    for (const vision::TruthFrame &f : m_verification.truth().frames)
        kept.push_back(f.index);
    const int frames = sourceFrames > 0 ? sourceFrames : m_labels->stats.frames;
    struct Picked
    {
        std::vector<int> frames;
        QString error;
    };
    m_runner.run(
        Task::DisagreementPick,
        [labels = m_labels, source = QString::fromStdString(m_labels->source),
         teacher = m_session.capture.teacher, dir = m_session.dir.toStdString(), kept, frames,
         count](const TaskRunner::Report &report, const std::atomic<bool> *stop) {
            Picked out;
            try {
                DisagreementRun run;
                run.source = source;
                run.teacher = teacher;
                run.labels = labels.get();
                run.sessionDir = dir;
                run.frames = Disagreement::candidates(frames, kept);
                const auto sources = Disagreement::collect(run, report, stop);
                if (stop && stop->load()) {
                    out.error = QStringLiteral("cancelled");
                    return out;
                }
                DisagreementPick pick;
                pick.frames = frames;
                pick.count = int(kept.size()) + count;
                pick.keep = kept;
                out.frames = Disagreement::pick(Disagreement::score(sources), pick);
            } catch (const std::exception &e) {
                out.error = QString::fromStdString(e.what());
            }
            return out;
        },
        [this, frameSize](const Picked &out) {
            if (!out.error.isEmpty())
                return finishTask(Task::DisagreementPick, false,
                                  QStringLiteral("picking where the detectors disagree: ") +
                                      out.error);
            const int added = m_verification.addPickedFrames(
                out.frames, "disagreement", m_labels ? m_labels->source : std::string(), frameSize);
            finishTask(Task::DisagreementPick, true,
                       QStringLiteral("%1 frame%2 added where the detectors disagree most")
                           .arg(added)
                           .arg(added == 1 ? QString() : QStringLiteral("s")));
        });
}

} // namespace edgetrain::app
