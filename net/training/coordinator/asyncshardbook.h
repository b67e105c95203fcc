#pragma once

#include <QCborMap>
#include <QString>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace edgetrain::net {

struct Member;

/**
 * Async mode's record of which part of an epoch's sample order each node trains, so that the
 * epoch still trains every sample once when a node leaves it: at the epoch's start each member
 * gets the contiguous part its worker computes from the group's shares; its applied pushes say
 * how far into its ranges it got; when it leaves, the rest of its ranges is orphaned, and at the
 * epoch's barrier the orphans go to the members that can take them, by speed. Samples are ranges
 * (first, count) of the epoch's sample order. Members are named by id.
 */
class AsyncShardBook
{
public:
    using Range = std::pair<std::int64_t, std::int64_t>; // first, count

    /** A new epoch of `samples` samples, split by `shares` among `ids` (in rank order, one share
     *  each); the last epoch's orphans and counts are forgotten. */
    void assign(const std::vector<int> &ids, std::int64_t samples,
                const std::vector<double> &shares);
    /** A new epoch without parts (not async, or no group to split among). */
    void clear();
    /** The member's applied push covered `samples` more of its ranges. */
    void applied(int id, std::int64_t samples);
    /** The member left mid-epoch: what it had not trained is orphaned; what its applied pushes
     *  trained still counts in the epoch (lostApplied()). */
    void orphanRest(int id);

    /** Samples of this epoch that members who left had trained. */
    std::int64_t lostApplied() const { return m_lostApplied; }
    /** Samples of this epoch nobody trains now. */
    std::int64_t orphaned() const;
    bool hasOrphans() const { return !m_orphans.empty(); }
    /** The ranges the member trains this epoch, in the order it trains them. */
    std::vector<Range> ranges(int id) const;

    /** One member that can take orphans: its id and speed (images/s). */
    struct Taker
    {
        int id = 0;
        double speed = 0.0;
    };
    /** Hands every orphan out to `takers` by speed, each a share; returns, per taker, the ranges
     *  it trains now (some may get none when there are fewer samples than takers). The orphans
     *  are gone afterwards, taken or, with no takers, dropped. */
    std::vector<std::vector<Range>> handOut(const std::vector<Taker> &takers);

    /** What handOut() gave members. */
    struct Handed
    {
        std::vector<Member *> takers; // those answered with more ranges
        QString summary;              // how many samples went to whom, for the run's events
    };
    /** At epoch `epoch`'s barrier: every orphan to those of `members` (each waiting with its
     *  epoch's end) that take more (JobReady::takes_more), by speed; each that gets ranges is
     *  answered with them (moreReply). No takers: nobody is answered, the orphans are dropped
     *  (and the loss logged). */
    Handed handOut(const std::vector<Member *> &members, int epoch);

    /** The answer that gives a node more ranges to train in this epoch (ReplyAction::More). */
    static QCborMap moreReply(const std::vector<Range> &ranges);

private:
    struct Part
    {
        std::vector<Range> ranges;
        std::int64_t applied = 0;
    };
    std::map<int, Part> m_parts;
    std::vector<Range> m_orphans;
    std::int64_t m_lostApplied = 0;
};

} // namespace edgetrain::net
