#include "net/training/coordinator/evaluationsplitter.h"

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/coordinator/member.h"
#include "net/training/job.h"
#include "net/training/trainingcoordinator.h"

#include <algorithm>
#include <limits>

namespace edgetrain::net {

namespace {
TrainingReply evaluateReply(std::int64_t first, std::int64_t end)
{
    TrainingReply evaluate;
    evaluate.action = ReplyAction::Evaluate;
    evaluate.test_part = {first, end};
    return evaluate;
}
} // namespace

void EvaluationSplitter::split(const std::vector<Member *> &members, bool stopping,
                               const QByteArray &weights)
{
    std::int64_t testSize = std::numeric_limits<std::int64_t>::max();
    std::vector<double> speeds;
    for (const Member *m : members) {
        testSize = std::min(testSize, m->ready.test_samples);
        speeds.push_back(m->speed);
    }
    const auto parts = splitByShares(testSize, sharesFromSpeeds(speeds));
    m_untested.clear();
    m_lostTested = {};
    std::int64_t begin = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
        TrainingReply answer = evaluateReply(begin, begin + parts[i]);
        if (stopping)
            answer.action = ReplyAction::Stop;
        if (!weights.isEmpty())
            answer.weights = weights;
        if (!stopping)
            m_evaluators[members[i]->id].part = {begin, begin + parts[i]};
        begin += parts[i];
        members[i]->answer(Member::Waits::EpochEnd, answer.toCbor());
    }
}

void EvaluationSplitter::reported(int id, const EpochEval &evaluated)
{
    Evaluator &e = m_evaluators[id];
    e.tested.loss += evaluated.loss_sum;
    e.tested.correct += evaluated.correct;
    e.tested.count += evaluated.count;
    e.part = {0, 0};
}

void EvaluationSplitter::leave(int id)
{
    const auto it = m_evaluators.find(id);
    if (it == m_evaluators.end())
        return;
    const Evaluator &e = it->second;
    if (e.part.second > e.part.first)
        m_untested.push_back(e.part);
    m_lostTested.loss += e.tested.loss;
    m_lostTested.correct += e.tested.correct;
    m_lostTested.count += e.tested.count;
    m_evaluators.erase(it);
}

bool EvaluationSplitter::handOutUntested(const std::vector<Member *> &members, int epoch)
{
    // A whole part to each node that takes one, the rest as they report: evaluating a part is
    // short next to an epoch, and the members wait at the barrier anyway.
    bool any = false;
    for (Member *m : members) {
        if (m_untested.empty())
            break;
        if (!m->ready.evaluates_more)
            continue; // an older node ends its evaluation with its own part
        const auto [first, end] = m_untested.back();
        m_untested.pop_back();
        m_evaluators[m->id].part = {first, end};
        m->answer(Member::Waits::Evaluation, evaluateReply(first, end).toCbor());
        qCInfo(lcCoordinator).noquote()
            << QStringLiteral("%1 evaluates test samples %2-%3 of epoch %4 that a lost node left")
                   .arg(m->label())
                   .arg(first)
                   .arg(end - 1)
                   .arg(epoch);
        any = true;
    }
    if (!any) {
        std::int64_t total = 0;
        for (const auto &[first, end] : m_untested)
            total += end - first;
        qCWarning(lcCoordinator).noquote()
            << QStringLiteral("%1 test samples of epoch %2 go unevaluated: no node left can take "
                              "a lost node's part")
                   .arg(total)
                   .arg(epoch);
        m_untested.clear();
    }
    return any;
}

EvaluationSplitter::Sums EvaluationSplitter::total(const std::vector<int> &ids) const
{
    Sums s;
    auto add = [&s](const Sums &t) {
        s.loss += t.loss;
        s.correct += t.correct;
        s.count += t.count;
    };
    for (const int id : ids)
        if (const auto it = m_evaluators.find(id); it != m_evaluators.end())
            add(it->second.tested);
    add(m_lostTested); // after the members': a sum's order fixes its last bit
    return s;
}

EvaluationSplitter::Part EvaluationSplitter::outstanding(int id) const
{
    const auto it = m_evaluators.find(id);
    return it == m_evaluators.end() ? Part{0, 0} : it->second.part;
}

void EvaluationSplitter::endEpoch()
{
    for (auto &[id, e] : m_evaluators)
        e.tested = {};
}

} // namespace edgetrain::net
