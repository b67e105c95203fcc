#include "net/training/coordinator/jobsender.h"

#include "net/protocol/protocol.h"
#include "net/training/coordinator/memberlink.h"
#include "net/training/shipment.h"

namespace edgetrain::net {

void JobSender::setData(std::shared_ptr<const core::TensorDataset> train,
                        std::shared_ptr<const core::TensorDataset> test)
{
    m_train = std::move(train);
    m_test = std::move(test);
    m_chunks.clear();
}

void JobSender::send(MemberLink &link, const JobSpec &job,
                     const std::vector<MemberLink *> &connected)
{
    if (m_train && m_chunks.isEmpty()) {
        // One byte per value only if every node taking part decodes it (older nodes do not).
        bool palette8 = true;
        for (const MemberLink *other : connected)
            palette8 = palette8 && other->info().shipment_encodings.contains(
                                       QLatin1String(Shipment::kPalette8));
        m_chunks =
            Shipment::chunks(*m_train, job.train_shipment, Shipment::kDefaultChunkBytes, palette8);
        if (m_test)
            m_chunks += Shipment::chunks(*m_test, job.test_shipment, Shipment::kDefaultChunkBytes,
                                         palette8);
    }
    for (const QCborMap &chunk : m_chunks)
        link.send(Message::DataChunk, chunk);
    JobSpec forNode = job.forNodes();
    if (const auto b = m_budgets.find(link.info().name); b != m_budgets.end())
        forNode.memory_budget_bytes = b->second;
    link.send(Message::Job, forNode.toCbor());
}

} // namespace edgetrain::net
