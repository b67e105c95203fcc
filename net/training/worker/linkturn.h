#pragma once

#include "net/protocol/messages/profilereport.h"
#include "net/training/exchangeprobe.h"
#include "net/training/job.h"
#include "net/training/joblink.h"
#include "net/training/worker/phaseclock.h"

#include <cstddef>
#include <optional>

namespace edgetrain::net {
struct WorkerContext;
}

namespace edgetrain::net::worker {

/**
 * A profile's turn at the coordinator's link probe: the node's link measured with timed
 * transfers to the probe server (measureLink), and in the same turn, where the job asks for it
 * (exchange_probe), the exchange timed against a rank the coordinator hosts over the node's
 * real path (measurePairExchange).
 *
 * The coordinator serves one probe at a time. A profile asks first, its data loaded and its CPU
 * idle, whether it is its turn (takeIfFree), then between its timings' phases, and else measures
 * after them, in line (takeInLine): when every node probed after its timings, two that finished
 * them together waited behind each other at the end. So one probe at a time runs beside the
 * other nodes' timings. On an edge lab every node shares the machine's cores with the probe's
 * transfers: when every node probed first, all of them in line, the probes ran beside the timings
 * for as long as the line took and each disturbed the others. Beside the loading of the data
 * the probe measured the node with its own CPU busy (a quota-held device answered the round
 * trips late and moved less than its link carries).
 */
class LinkTurn
{
public:
    /** `pairFloats`: what the exchange with the coordinator reduces; `pairSeconds` its windows.
     *  Laps "link", "turn" and "exchange" go to `clock`. */
    LinkTurn(const JobSpec &job, const WorkerContext &context, JobLink &link, PhaseClock &clock,
             std::size_t pairFloats, double pairSeconds);

    /** Measures now if no other node is measuring (a connection and a round trip to ask);
     *  nothing once measured, or where the job has no probe or its server answers no turns. */
    void takeIfFree();
    /** Measures in line behind the other nodes' probes, unless it was this node's turn already
     *  or the job has no probe. */
    void takeInLine();

    /** The link's figures, or its error (not tried again); none before a turn. */
    const std::optional<LinkFigures> &link() const { return m_link; }
    /** The exchange as timed with the coordinator (empty: not timed there). */
    const ExchangeFigures &exchange() const { return m_exchange; }
    /** Why the exchange could not be timed with the coordinator (empty: it was, or not tried). */
    const QString &exchangeError() const { return m_exchangeError; }

private:
    enum class When { IfFree, InLine };
    void probe(When when);
    /** Runs in the turn after the round trips; says whether the link's transfers are still
     *  wanted. */
    bool exchangeWithCoordinator();

    const JobSpec &m_job;
    const WorkerContext &m_context;
    JobLink &m_jobLink;
    PhaseClock &m_clock;
    std::size_t m_pairFloats;
    double m_pairSeconds;
    std::optional<LinkFigures> m_link;
    ExchangeFigures m_exchange;
    QString m_exchangeError;
};

/** Figures of an exchange measurement, timed `over` the link or loopback; its CPU per byte (over
 *  the link) as a share of `busyCores`, what the device's power figure is for. */
ExchangeFigures exchangeFigures(const ExchangeMeasurement &e, ExchangeFigures::Over over,
                                double busyCores);

} // namespace edgetrain::net::worker
