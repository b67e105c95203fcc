#include "net/training/coordinator/parameterserverendpoint.h"

#include "core/sgd.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/job.h"
#include "net/training/parameterserver.h"
#include "net/training/trainingcoordinator.h"

namespace edgetrain::net {

namespace {
QByteArray floatBytes(const std::vector<float> &values)
{
    return QByteArray(reinterpret_cast<const char *>(values.data()),
                      qsizetype(values.size() * sizeof(float)));
}
} // namespace

ParameterServerEndpoint::ParameterServerEndpoint(const JobSpec &job)
{
    core::SgdOptions sgd;
    sgd.momentum = job.momentum;
    sgd.weight_decay = job.weight_decay;
    sgd.nesterov = job.nesterov;
    m_ps = std::make_unique<ParameterServer>(
        core::ModelSpec::fromJson(job.model, "the job's model"), job.seed, sgd, job.staleness,
        job.batch, job.average_decay);
    m_ps->setMaxRate(job.lr * (1.0 + 1e-9)); // no schedule goes above the job's rate
}

ParameterServerEndpoint::~ParameterServerEndpoint() = default;

void ParameterServerEndpoint::pull(Member &m, qint64 request)
{
    if (m.link)
        m.link->reply(request, weightsReply(m.id, false));
}

ParameterServerEndpoint::PushOutcome ParameterServerEndpoint::push(Member &m, qint64 request,
                                                                   const GradientPush &push)
{
    std::vector<float> data;
    const bool ok =
        readPush(push, m_ps->gradientSize(), m_ps->pushSize() - m_ps->gradientSize(), data);
    const auto p = ok ? m_ps->push(m.id, std::uint64_t(push.version), data.data(), data.size(),
                                   push.lr, push.count)
                      : ParameterServer::Push{};
    if (!p.applied) {
        // Out of the run, like a failed node: the parameter server must not wait for its clock,
        // or every other node is held once it is S pushes ahead.
        if (m.link)
            m.link->reply(request, stopReply());
        return {true, 0};
    }
    if (!m_ps->mayProceed(m.id)) {
        m.wait(Member::Waits::Push, request); // held until the slowest catches up
        m_heldCompressed[m.id] = push.compressed;
        m_ps->countHeld();
        return {false, push.count};
    }
    if (m.link)
        m.link->reply(request, weightsReply(m.id, push.compressed));
    return {false, push.count};
}

void ParameterServerEndpoint::releaseHeld(const std::vector<Member *> &members)
{
    for (Member *m : members) {
        if (!m->waits(Member::Waits::Push) || !m_ps->mayProceed(m->id))
            continue;
        const bool compressed = m_heldCompressed[m->id];
        m_heldCompressed.erase(m->id);
        m->answer(Member::Waits::Push, weightsReply(m->id, compressed));
    }
}

void ParameterServerEndpoint::join(int id)
{
    m_ps->addWorker(id);
}

void ParameterServerEndpoint::leave(int id)
{
    m_ps->removeWorker(id);
    m_heldCompressed.erase(id);
}

void ParameterServerEndpoint::setRunning(int id, bool running)
{
    m_ps->setRunning(id, running);
}

void ParameterServerEndpoint::resetClocks()
{
    m_ps->resetClocks();
}

void ParameterServerEndpoint::epochDone(const Member &m, const EpochDone &done)
{
    m_ps->setRunning(m.id, false);
    const QString &held = done.held_fingerprint;
    if (held.isEmpty()) // older nodes send none
        return;
    ++m_mirrorChecks;
    if (held != m_ps->mirrorFingerprint(m.id)) {
        ++m_mirrorMismatches;
        qCWarning(lcCoordinator).noquote()
            << m.label()
            << "holds weights that differ from the parameter server's copy of them; its next "
               "epoch starts from the full weights";
    }
}

void ParameterServerEndpoint::report(ClusterResult &result)
{
    result.weights = m_ps->resultWeights();
    result.max_staleness = m_ps->maxStaleness();
    result.pushes = m_ps->pushes();
    result.held_pushes = m_ps->held();
    result.mirror_checks = m_mirrorChecks;
    result.mirror_mismatches = m_mirrorMismatches;
}

QByteArray ParameterServerEndpoint::resultBytes()
{
    return floatBytes(m_ps->resultWeights());
}

QCborMap ParameterServerEndpoint::weightsReply(int id, bool compressed)
{
    WeightsReply reply;
    reply.version = std::int64_t(m_ps->version());
    if (compressed) {
        reply.weights = m_ps->delta(id);
        reply.delta = !reply.weights.isEmpty();
    }
    if (!reply.delta)
        reply.weights = floatBytes(m_ps->pull(id));
    return reply.toCbor();
}

} // namespace edgetrain::net
