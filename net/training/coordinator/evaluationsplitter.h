#pragma once

#include <QByteArray>
#include <QCborMap>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace edgetrain::net {

struct EpochEval;
struct Member;

/**
 * The epoch's evaluation spread over the members: at the epoch's barrier the test set is split
 * among them by speed and each is told its part (in the answer to its epoch's end); each reports
 * what its part summed to. A member that leaves before reporting leaves its part untested; at the
 * evaluation's barrier those parts go to the members that can take them, so the epoch's figures
 * are of the whole test set on the same model. What members who left did report still counts.
 * Members are named by id; answers go through their links. Runs on the thread that owns it.
 */
class EvaluationSplitter
{
public:
    /** What evaluating parts of the test set gave, summed. */
    struct Sums
    {
        double loss = 0.0; // summed over the samples
        std::int64_t correct = 0, count = 0;
    };
    using Part = std::pair<std::int64_t, std::int64_t>; // first, end of the test set

    /** The epoch's barrier: each of `members` (waiting with its epoch's end) is answered with its
     *  part of the test set (the smallest test set any of them has, split by their speeds) and,
     *  if not empty, `weights` to evaluate (async: the parameter server's). With `stopping` they
     *  are told to stop instead, and nothing is out. Forgets the last epoch's parts. */
    void split(const std::vector<Member *> &members, bool stopping, const QByteArray &weights);
    /** The member's epoch_eval: its part is evaluated; adds its sums. */
    void reported(int id, const EpochEval &evaluated);
    /** The member leaves the run: its part not reported is untested, its sums stay counted. */
    void leave(int id);
    /** At the evaluation's barrier: one untested part to each of `members` (waiting with their
     *  evaluation's end) that evaluates more, the rest as they report again. False, and the
     *  parts dropped, if nobody took any (the epoch is reported without them). `epoch` names it
     *  in the log. */
    bool handOutUntested(const std::vector<Member *> &members, int epoch);
    bool hasUntested() const { return !m_untested.empty(); }

    /** What `ids` reported this epoch and what members who left did. */
    Sums total(const std::vector<int> &ids) const;
    /** The part the member has to report (first == end: none). */
    Part outstanding(int id) const;
    /** The epoch is over: every member's sums start from zero. */
    void endEpoch();

private:
    struct Evaluator
    {
        Part part{0, 0};
        Sums tested;
    };
    std::map<int, Evaluator> m_evaluators;
    std::vector<Part> m_untested; // parts members who left did not report
    Sums m_lostTested;            // what members who left did report
};

} // namespace edgetrain::net
