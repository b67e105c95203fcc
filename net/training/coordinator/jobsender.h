#pragma once

#include "core/tensordataset.h"
#include "net/training/job.h"

#include <QCborMap>
#include <QList>
#include <QString>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace edgetrain::net {

class MemberLink;

/**
 * What a node is sent to start the job (at the run's start, and again when it comes back): the
 * shipped data, if any, and the job with the node's own memory budget. The data is chunked and
 * checksummed once for every node; one byte per value (palette8) only if every node connected
 * when it is first sent decodes it.
 */
class JobSender
{
public:
    /** Data to ship (`test` may be none). */
    void setData(std::shared_ptr<const core::TensorDataset> train,
                 std::shared_ptr<const core::TensorDataset> test);
    /** Per node name, bytes: replaces the job's memory budget for that node. */
    void setBudgets(std::map<QString, std::int64_t> byNode) { m_budgets = std::move(byNode); }
    /** Sends the data and `job` (as the nodes get it) to `link`; `connected`: every member's
     *  link now. */
    void send(MemberLink &link, const JobSpec &job, const std::vector<MemberLink *> &connected);

private:
    std::shared_ptr<const core::TensorDataset> m_train, m_test;
    std::map<QString, std::int64_t> m_budgets;
    QList<QCborMap> m_chunks; // the shipments' frames, made on first use
};

} // namespace edgetrain::net
