#pragma once

#include "app/session/session.h"

#include <QList>
#include <QString>
#include <QStringList>

#include <string>

namespace edgetrain::ui {

/**
 * The report's words and tables, composed from a session's evaluation: one source for the
 * Report page and the PDF, so the window and the paper say the same thing. Figures against
 * verified frames (boxes a person checked) come first when there are any; the figures against
 * the tracker's own labels are always named for what they are. Pure functions of their
 * arguments; GUI-free.
 */
class ReportText
{
public:
    /** How the headline names what the truth holds: "people" for "person", else "objects". */
    static QString objectsWord(const std::string &category);
    /** The current verified round (the last), or nullptr when no round has scores. */
    static const app::VerifiedRound *currentRound(const app::Session &session);

    /**
     * The headline, plain text. With verified frames: recall and precision of each detector on
     * them, student first ("On 13 verified frames (from frame 480 on, never seen in training)
     * the student finds 87 % of the people at 93 % precision; the teacher 41 % at 80 %; motion
     * 90 % at 95 %."), and the first round's student when self-training ran more rounds.
     * Without: the figures against the tracker's labels, said to be that, and an invitation to
     * verify frames.
     */
    static QString headline(const app::Session &session, const std::string &category);
    /** The headline against the tracker's labels only (whether or not frames are verified). */
    static QString trackerHeadline(const app::Session &session);
    /** What to do when no frame is verified (names the Verify step). */
    static QString verifyInvitation();

    /** Header + one row per detector of the current round: recall, precision, F1, AP50,
     *  AP@[.5:.95], TP / FP, frames/s. With more than one round, every round's rows, the
     *  first column naming the round. Only the header without verified figures. */
    static QList<QStringList> verifiedRows(const app::Session &session);
    /** Header + one row per device that reported power during the run: how (measured or
     *  estimated from its profile), its energy over the readings, its mean power, and the
     *  energy per epoch (the run's over its epochs). Only the header without power readings. */
    static QList<QStringList> energyRows(const app::Session &session);
    /** With a planned run: header + the planner's best candidates (at most `top`, the chosen one
     *  marked) with their predicted time, power, energy and EDP. Only the header otherwise. */
    static QList<QStringList> clusterPlanRows(const app::Session &session, int top = 8);
    /** With a planned run: the objective, profiling time, and the chosen cluster's prediction
     *  against its measured training ("" otherwise). */
    static QString clusterPlanSummary(const app::Session &session);
    /** Header + the three rows against the tracker's labels ("–" where nothing was measured). */
    static QList<QStringList> trackerRows(const app::Session &session);
    /** What the verified figures were measured on, one sentence ("" without them). */
    static QString verifiedMethod(const app::Session &session);
    /** How the student's operating threshold was chosen (" ..." to append; empty if unknown). */
    static QString operatingPoint(const app::Session &session);

    /** "the student", "the teacher", "motion", or the name itself. */
    static QString detectorPhrase(const std::string &name);
    /** Detections per second of a detector in the current round (0: not measured). */
    static double framesPerSecond(const app::Session &session, const std::string &name);
    static QString percent(double fraction, int decimals = 1);

    /** `n` with the word that goes with it: "1 node", "3 nodes", "0 nodes". */
    static QString count(int n, const QString &one, const QString &many);
    /** An English ordinal: "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "112th". */
    static QString ordinal(int n);
    /** "every frame" for 1 (or less), else "every 2nd frame", "every 10th frame". */
    static QString everyNth(int n);

    /** The run in a sentence: epochs run of the maximum, whether and why it ended early, and
     *  which epoch's weights the student keeps ("" when nothing was trained). */
    static QString trainingFacts(const app::Session &session);
    /** What the gallery's boxes are, named and described as app::palette draws them. */
    static QString galleryLegend(bool verified);
    /** `session` with at most one evaluation gain per frame (its first), for Gallery::renderGains:
     *  two people found in one frame would show that frame twice. */
    static app::Session withOneGainPerFrame(app::Session session);
    /** Header + one row per term or abbreviation the report uses, with its meaning in plain
     *  words, in alphabetical order. */
    static QList<QStringList> glossary();
};

} // namespace edgetrain::ui
