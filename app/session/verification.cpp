#include "verification.h"

#include "framepick.h"

#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <set>

namespace edgetrain::app {

std::vector<Proposal> Proposal::fromLabels(const vision::LabelResult &labels, int frame)
{
    std::vector<Proposal> out;
    for (const vision::Track &t : labels.tracks) {
        const vision::TrackBox *b = t.at(frame);
        if (!b)
            continue;
        Proposal p;
        p.box = b->box;
        p.track = t.id;
        p.kind = t.state == vision::Track::State::Rejected ? Kind::Rejected
                 : b->source == vision::BoxSource::Teacher ? Kind::Teacher
                                                           : Kind::Tracker;
        out.push_back(p);
    }
    return out;
}

/** One edit: the whole truth before and after (a few dozen frames: small), and the frame the
 *  user was on, so undo shows what it undid. */
class TruthCommand : public QUndoCommand
{
public:
    TruthCommand(Verification *owner, const QString &text, vision::GroundTruth before,
                 vision::GroundTruth after, int frame)
        : QUndoCommand(text), m_owner(owner), m_before(std::move(before)),
          m_after(std::move(after)), m_frame(frame)
    {}
    void undo() override { m_owner->apply(m_before, m_frame); }
    void redo() override { m_owner->apply(m_after, m_frame); }

private:
    Verification *m_owner;
    vision::GroundTruth m_before, m_after;
    int m_frame;
};

namespace {

double iou(const cv::Rect2d &a, const cv::Rect2d &b)
{
    const double inter = (a & b).area();
    const double uni = a.area() + b.area() - inter;
    return uni > 0 ? inter / uni : 0.0;
}

bool sameBoxes(const vision::TruthFrame &a, const vision::TruthFrame &b)
{
    if (a.index != b.index || a.done != b.done || a.boxes.size() != b.boxes.size())
        return false;
    for (std::size_t i = 0; i < a.boxes.size(); ++i)
        if (a.boxes[i].box != b.boxes[i].box || a.boxes[i].ignore != b.boxes[i].ignore ||
            a.boxes[i].id != b.boxes[i].id)
            return false;
    return true;
}

bool sameTruth(const vision::GroundTruth &a, const vision::GroundTruth &b)
{
    if (a.source != b.source || a.frame_size != b.frame_size || a.frames.size() != b.frames.size())
        return false;
    for (std::size_t i = 0; i < a.frames.size(); ++i)
        if (!sameBoxes(a.frames[i], b.frames[i]))
            return false;
    return true;
}

} // namespace

Verification::Verification(QObject *parent) : QObject(parent)
{
    m_saver.setMaxThreadCount(1);
    m_undo.setUndoLimit(500);
}

Verification::~Verification()
{
    m_saver.waitForDone();
}

bool Verification::open(const QString &sessionDir, QString *error)
{
    m_saver.waitForDone(); // the previous session's last edit lands in its own folder
    m_undo.clear();
    m_dir = sessionDir;
    m_truth = vision::GroundTruth();
    bool ok = true;
    const std::string dir = sessionDir.toStdString();
    if (!sessionDir.isEmpty() && vision::GroundTruth::exists(dir)) {
        try {
            m_truth = vision::GroundTruth::load(dir);
        } catch (const std::exception &e) {
            *error = QStringLiteral("the verified frames could not be read: %1")
                         .arg(QString::fromStdString(e.what()));
            ok = false;
        }
    }
    Q_EMIT truthChanged(-1);
    return ok;
}

void Verification::moveTo(const QString &sessionDir)
{
    m_saver.waitForDone();
    m_dir = sessionDir;
}

std::vector<int> Verification::frames() const
{
    std::vector<int> out;
    for (const vision::TruthFrame &f : m_truth.frames)
        out.push_back(f.index);
    return out;
}

void Verification::pickFrames(const vision::LabelResult *labels, int sourceFrames, int count,
                              int seed, const std::string &source, cv::Size frameSize)
{
    FramePick pick = FramePick::fromLabels(labels, sourceFrames, count, seed);
    for (const vision::TruthFrame &f : m_truth.frames)
        if (f.done || !f.boxes.empty())
            pick.keep.push_back(f.index);
    const std::vector<int> chosen = app::pickFrames(pick);
    edit(-1, tr("pick %1 frames").arg(count), [&](vision::GroundTruth &t) {
        if (!source.empty())
            t.source = source;
        if (frameSize.area() > 0)
            t.frame_size = frameSize;
        std::vector<vision::TruthFrame> kept;
        for (const vision::TruthFrame &f : t.frames)
            if (std::binary_search(chosen.begin(), chosen.end(), f.index))
                kept.push_back(f);
        t.frames = std::move(kept);
        for (int f : chosen) {
            vision::TruthFrame &frame = t.ensureFrame(f);
            if (!frame.done && frame.boxes.empty()) // untouched: this pick's now
                frame.pick = "spread";
        }
        return true;
    });
}

int Verification::addPickedFrames(const std::vector<int> &frames, const std::string &pick,
                                  const std::string &source, cv::Size frameSize)
{
    std::vector<int> added;
    for (int f : frames)
        if (f >= 0 && !m_truth.frame(f))
            added.push_back(f);
    if (added.empty())
        return 0;
    edit(-1, tr("pick %1 frames where the detectors disagree").arg(added.size()),
         [&](vision::GroundTruth &t) {
             if (!source.empty() && t.source.empty())
                 t.source = source;
             if (frameSize.area() > 0 && t.frame_size.area() == 0)
                 t.frame_size = frameSize;
             for (int f : added)
                 t.ensureFrame(f).pick = pick;
             return true;
         });
    return int(added.size());
}

void Verification::addBox(int frame, const cv::Rect2d &box)
{
    edit(frame, tr("draw a box"), [&](vision::GroundTruth &t) {
        vision::TruthBox b;
        b.box = box;
        t.ensureFrame(frame).boxes.push_back(b);
        return true;
    });
}

void Verification::setBox(int frame, int index, const cv::Rect2d &box)
{
    edit(frame, tr("move a box"), [&](vision::GroundTruth &t) {
        vision::TruthFrame *f = t.frame(frame);
        if (!f || index < 0 || index >= int(f->boxes.size()))
            return false;
        f->boxes[std::size_t(index)].box = box;
        return true;
    });
}

void Verification::removeBox(int frame, int index)
{
    edit(frame, tr("delete a box"), [&](vision::GroundTruth &t) {
        vision::TruthFrame *f = t.frame(frame);
        if (!f || index < 0 || index >= int(f->boxes.size()))
            return false;
        f->boxes.erase(f->boxes.begin() + index);
        return true;
    });
}

void Verification::setIgnore(int frame, int index, bool ignore)
{
    edit(frame, ignore ? tr("mark a box ignore") : tr("count a box again"),
         [&](vision::GroundTruth &t) {
             vision::TruthFrame *f = t.frame(frame);
             if (!f || index < 0 || index >= int(f->boxes.size()))
                 return false;
             f->boxes[std::size_t(index)].ignore = ignore;
             return true;
         });
}

void Verification::setDone(int frame, bool done)
{
    edit(frame, done ? tr("mark frame %1 done").arg(frame) : tr("reopen frame %1").arg(frame),
         [&](vision::GroundTruth &t) {
             t.ensureFrame(frame).done = done;
             return true;
         });
}

int Verification::acceptProposals(int frame, const std::vector<cv::Rect2d> &boxes)
{
    int added = 0;
    edit(frame, boxes.size() == 1 ? tr("accept a proposal") : tr("accept the proposals"),
         [&](vision::GroundTruth &t) {
             vision::TruthFrame &f = t.ensureFrame(frame);
             for (const cv::Rect2d &box : boxes) {
                 const bool covered =
                     std::any_of(f.boxes.begin(), f.boxes.end(),
                                 [&](const vision::TruthBox &b) { return iou(b.box, box) >= 0.7; });
                 if (covered)
                     continue;
                 vision::TruthBox b;
                 b.box = box;
                 f.boxes.push_back(b);
                 ++added;
             }
             return added > 0;
         });
    return added;
}

void Verification::edit(int frame, const QString &text,
                        const std::function<bool(vision::GroundTruth &)> &change)
{
    vision::GroundTruth after = m_truth;
    if (!change(after) || sameTruth(after, m_truth))
        return;
    m_undo.push(new TruthCommand(this, text, m_truth, std::move(after), frame)); // redo() applies
}

void Verification::apply(const vision::GroundTruth &truth, int frame)
{
    m_truth = truth;
    save();
    Q_EMIT truthChanged(frame);
}

void Verification::save()
{
    if (m_dir.isEmpty())
        return;
    (void)QtConcurrent::run(&m_saver, [this, snapshot = m_truth, dir = m_dir.toStdString()] {
        try {
            snapshot.save(dir);
            m_saveOk = true;
        } catch (const std::exception &e) {
            m_saveOk = false;
            const QString text = QStringLiteral("the verified frames were not saved: %1")
                                     .arg(QString::fromStdString(e.what()));
            QMetaObject::invokeMethod(
                this, [this, text] { Q_EMIT saveFailed(text); }, Qt::QueuedConnection);
        }
    });
}

bool Verification::flush()
{
    m_saver.waitForDone();
    return m_saveOk;
}

} // namespace edgetrain::app
