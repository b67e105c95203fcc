#pragma once

#include "vision/groundtruth.h"
#include "vision/labeling.h"

#include <QObject>
#include <QThreadPool>
#include <QUndoStack>

#include <atomic>
#include <functional>
#include <vector>

namespace edgetrain::app {

/** A box some detector or the tracker proposes on a frame, for a person to accept or not. */
struct Proposal
{
    enum class Kind { Teacher, Tracker, Rejected, Student };
    cv::Rect2d box;
    Kind kind = Kind::Teacher;
    int track = -1; // the label track it comes from (-1: none)

    /** The boxes of every track on `frame`: a teacher hit, a tracker box, or a box of a track
     *  rejected in review. */
    static std::vector<Proposal> fromLabels(const vision::LabelResult &labels, int frame);
};

/**
 * The Verify step's state: the session's ground truth (truth.json) and its undo history. Every
 * edit is one undoable command (a drag is one edit, made when the mouse is released) and is
 * saved at once: a snapshot of the truth is written atomically by a saver thread, in order, so
 * the GUI thread never waits for the disk and a crash leaves the previous file. Lives on the GUI
 * thread. Frames are the source's frame indices; boxes are in source pixels, addressed by their
 * index in the frame's list.
 */
class Verification : public QObject
{
    Q_OBJECT

public:
    explicit Verification(QObject *parent = nullptr);
    ~Verification() override;

    /** Reads <dir>/truth.json, or starts an empty truth if there is none; the undo history is
     *  cleared. False with the reason (file, field) if the file is unreadable: the truth is then
     *  empty and nothing is written over the file until the user edits. */
    bool open(const QString &sessionDir, QString *error);
    /** The session moved (Save As): later saves go to `sessionDir`. */
    void moveTo(const QString &sessionDir);
    const QString &sessionDir() const { return m_dir; }

    const vision::GroundTruth &truth() const { return m_truth; }
    /** The frames to verify (the truth's frames), sorted. */
    std::vector<int> frames() const;
    QUndoStack *undoStack() { return &m_undo; }

    /** Chooses frames with pickFrames(), keeping frames that are done or hold boxes; frames that
     *  were picked but never touched may be replaced. One undoable command. */
    void pickFrames(const vision::LabelResult *labels, int sourceFrames, int count, int seed,
                    const std::string &source, cv::Size frameSize);
    /** Adds `frames` (those not picked yet) as chosen by `pick` (e.g. "disagreement"), keeping
     *  every frame picked so far. One undoable command; returns how many were new. */
    int addPickedFrames(const std::vector<int> &frames, const std::string &pick,
                        const std::string &source, cv::Size frameSize);

    // Edits (each one command; out-of-range box indices are ignored)
    void addBox(int frame, const cv::Rect2d &box);
    /** Moves or resizes a box to `box`. */
    void setBox(int frame, int index, const cv::Rect2d &box);
    void removeBox(int frame, int index);
    void setIgnore(int frame, int index, bool ignore);
    void setDone(int frame, bool done);
    /** Adds the proposals no truth box already covers (IoU >= 0.7); returns how many. */
    int acceptProposals(int frame, const std::vector<cv::Rect2d> &boxes);

    /** Waits for the saves under way; true if the last one succeeded. */
    bool flush();

Q_SIGNALS:
    /** The truth changed: on `frame` (or -1: anywhere, e.g. a session was opened). */
    void truthChanged(int frame);
    void saveFailed(const QString &message);

private:
    friend class TruthCommand;
    void edit(int frame, const QString &text,
              const std::function<bool(vision::GroundTruth &)> &change);
    void apply(const vision::GroundTruth &truth, int frame); // by the undo commands
    void save();

    QString m_dir;
    vision::GroundTruth m_truth;
    QUndoStack m_undo;
    QThreadPool m_saver;
    std::atomic<bool> m_saveOk{true};
};

} // namespace edgetrain::app
