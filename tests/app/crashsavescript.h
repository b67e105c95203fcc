#pragma once

// What tst_crashsave's child does to a session, step by step, and what the session folder holds
// after each step: a function of the step number and the state the step starts from, so the test
// (which keeps the same state without writing it) knows what a reopened session must hold.

#include "app/session/session.h"
#include "app/session/verification.h"
#include "vision/labeling.h"

#include <QString>

/** The three files a step may save: session.json with its CSVs, truth.json, labels.json. */
enum class SavedFile { Session, Truth, Labels };

/** A step: the file it saves and what it did ("epoch", "truth edit", ...). */
struct CrashSaveStep
{
    SavedFile file = SavedFile::Session;
    const char *what = "";
};

/** A session as the app holds it: the session, the Verify step's truth, the review's labels. */
struct CrashSaveState
{
    edgetrain::app::Session session;
    edgetrain::app::Verification verification; // the truth, edited as the Verify view edits it
    edgetrain::vision::LabelResult labels;

    /** The session in `dir` as the app reopens it: Session::open, Verification::open and
     *  LabelResult::load. With `writes` false the truth's later edits are not saved (the test's
     *  copy). False with the reason otherwise. */
    bool open(const QString &dir, bool writes, QString *error);
};

/**
 * The steps. Step 0 makes the session (a labelled source, a frame dataset, three nodes, 24
 * frames picked to verify) and saves all three files. Each later step changes one file's part of
 * the state as the app does and says which file it saves: a truth edit (a box drawn, a frame
 * marked done), a label edit in the review (a track rejected or accepted again), or the next
 * thing a training run saves (its start, which clears the run's rows; an epoch with its device
 * readings and progress rows; its end; its evaluation). A run the app was killed in reopens as
 * stopped, and the next session step starts a new one, as a user would.
 */
class CrashSaveScript
{
public:
    static constexpr int kEpochs = 6;            // per run
    static constexpr int kNodes = 3;             // each reports every reading below
    static constexpr int kReadingsPerEpoch = 40; // per node: metrics.csv rows
    static constexpr int kProgressPerEpoch = 8;  // per node: progress.csv rows

    /** Makes step 0's state in `state`, its session folder `dir`. Like every truth edit, the
     *  frames picked are saved by the Verification; save() writes the rest. */
    static void create(CrashSaveState &state, const QString &dir);
    /** Applies step `step` (>= 1) to `state` and says which file it changed. The truth edit is
     *  saved by the Verification itself (in the background, as in the app). */
    static CrashSaveStep advance(CrashSaveState &state, int step);
    /** Saves `file` of `state` the way the app does (Session::save, the Verification's save
     *  finished with flush(), LabelResult::save). False with the reason otherwise. */
    static bool save(CrashSaveState &state, SavedFile file, QString *error);
};
