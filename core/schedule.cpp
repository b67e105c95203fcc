#include "schedule.h"

#include "error.h"

#include <algorithm>
#include <limits>

namespace edgetrain::core {

namespace {

class Builder
{
public:
    explicit Builder(int stages) : m_stages(stages) {}

    void keep(int i) { m_ops.push_back({ScheduleOp::ForwardKeep, i}); }
    void discard(int i) { m_ops.push_back({ScheduleOp::Discard, i}); }
    void backward(int i) { m_ops.push_back({ScheduleOp::Backward, i}); }
    /** Forward with cache; after the last stage the loss follows at once. */
    void cache(int i)
    {
        m_ops.push_back({ScheduleOp::ForwardCache, i});
        if (i == m_stages - 1)
            m_ops.push_back({ScheduleOp::Loss, m_stages});
    }
    /** From stored x[from] to stored x[to] without keeping the states in between. */
    void advance(int from, int to)
    {
        for (int k = from; k < to; ++k) {
            keep(k);
            if (k > from)
                discard(k);
        }
    }
    std::vector<ScheduleOp> take() { return std::move(m_ops); }

private:
    int m_stages;
    std::vector<ScheduleOp> m_ops;
};

void checkStages(int stages)
{
    if (stages < 1 || stages > 100000)
        throw SpecError("a schedule needs between 1 and 100000 stages, got " +
                        std::to_string(stages));
}

/** T(l, c) and the best first split for binomial checkpointing, memoised. */
class RevolveTable
{
public:
    RevolveTable(int maxLength, int maxSlots)
        : m_slots(maxSlots + 1), m_cost(std::size_t(maxLength + 1) * std::size_t(maxSlots + 1), -1),
          m_split(m_cost.size(), 0)
    {}

    std::int64_t cost(int l, int c)
    {
        if (l <= 1)
            return l;
        if (c == 0)
            return std::int64_t(l) * (l + 1) / 2; // reverse each stage from the chain's start
        std::int64_t &memo = m_cost[index(l, c)];
        if (memo >= 0)
            return memo;
        std::int64_t best = std::numeric_limits<std::int64_t>::max();
        int bestSplit = 1;
        for (int j = 1; j < l; ++j) {
            const std::int64_t t = j + cost(l - j, c - 1) + cost(j, c);
            if (t < best) {
                best = t;
                bestSplit = j;
            }
        }
        m_split[index(l, c)] = bestSplit;
        return memo = best;
    }

    int split(int l, int c)
    {
        cost(l, c);
        return m_split[index(l, c)];
    }

private:
    std::size_t index(int l, int c) const
    {
        return std::size_t(l) * std::size_t(m_slots) + std::size_t(c);
    }
    int m_slots;
    std::vector<std::int64_t> m_cost;
    std::vector<int> m_split;
};

void revolveOps(Builder &b, RevolveTable &table, int s, int l, int c)
{
    if (l == 1) {
        b.cache(s);
        b.backward(s);
        return;
    }
    if (c == 0) {
        for (int e = s + l - 1; e >= s; --e) {
            b.advance(s, e);
            b.cache(e);
            if (e > s)
                b.discard(e);
            b.backward(e);
        }
        return;
    }
    const int j = table.split(l, c);
    b.advance(s, s + j);
    revolveOps(b, table, s + j, l - j, c - 1);
    b.discard(s + j);
    revolveOps(b, table, s, j, c);
}

} // namespace

Schedule Schedule::fromOps(std::string name, int stages, std::vector<ScheduleOp> ops)
{
    checkStages(stages);
    Schedule s;
    s.m_name = std::move(name);
    s.m_stages = stages;
    s.m_ops = std::move(ops);
    return s;
}

Schedule Schedule::storeAll(int stages)
{
    checkStages(stages);
    Builder b(stages);
    for (int i = 0; i < stages; ++i) {
        b.cache(i);
        if (i > 0)
            b.discard(i); // stage i's cache keeps x[i] if its backward needs it
    }
    for (int i = stages - 1; i >= 0; --i)
        b.backward(i);
    return fromOps("store-all", stages, b.take());
}

Schedule Schedule::sequential(int stages, int segments)
{
    checkStages(stages);
    if (segments < 1 || segments > stages)
        throw SpecError("sequential:" + std::to_string(segments) + " needs 1 to " +
                        std::to_string(stages) + " segments for a chain of " +
                        std::to_string(stages) + " stages");
    if (segments == 1) {
        Schedule s = storeAll(stages);
        s.m_name = "sequential:1";
        return s;
    }
    const int size = stages / segments;
    std::vector<int> starts;
    for (int k = 0; k < segments - 1; ++k)
        starts.push_back(k * size);
    const int last = (segments - 1) * size;
    Builder b(stages);
    for (const int a : starts)
        b.advance(a, a + size);
    for (int i = last; i < stages; ++i) {
        b.cache(i);
        if (i > last)
            b.discard(i);
    }
    for (int i = stages - 1; i >= last; --i)
        b.backward(i);
    b.discard(last);
    for (int k = segments - 2; k >= 0; --k) {
        const int a = starts[std::size_t(k)];
        for (int i = a; i < a + size; ++i) {
            b.cache(i);
            if (i > a)
                b.discard(i);
        }
        for (int i = a + size - 1; i >= a; --i)
            b.backward(i);
        if (a > 0)
            b.discard(a);
    }
    return fromOps("sequential:" + std::to_string(segments), stages, b.take());
}

Schedule Schedule::revolve(int stages, int slots)
{
    checkStages(stages);
    if (slots < 0)
        throw SpecError("revolve needs a slot count >= 0");
    slots = std::min(slots, stages - 1); // more slots than stages change nothing
    RevolveTable table(stages, slots);
    Builder b(stages);
    revolveOps(b, table, 0, stages, slots);
    return fromOps("revolve:" + std::to_string(slots), stages, b.take());
}

std::int64_t Schedule::revolveForwards(int stages, int slots)
{
    slots = std::clamp(slots, 0, std::max(0, stages - 1));
    RevolveTable table(stages, slots);
    return table.cost(stages, slots);
}

Schedule Schedule::parse(const std::string &text, int stages)
{
    if (text == "store-all")
        return storeAll(stages);
    const auto colon = text.find(':');
    if (colon != std::string::npos) {
        const std::string kind = text.substr(0, colon);
        int value = -1;
        try {
            std::size_t used = 0;
            value = std::stoi(text.substr(colon + 1), &used);
            if (used != text.size() - colon - 1)
                value = -1;
        } catch (const std::exception &) {
            value = -1;
        }
        if (kind == "sequential" && value >= 1)
            return sequential(stages, value);
        if (kind == "revolve" && value >= 0)
            return revolve(stages, value);
    }
    throw SpecError("schedule '" + text +
                    "': expected store-all, sequential:SEGMENTS, revolve:SLOTS or optimal");
}

std::int64_t Schedule::forwardCount() const
{
    return std::count_if(m_ops.begin(), m_ops.end(), [](const ScheduleOp &op) {
        return op.kind == ScheduleOp::ForwardKeep || op.kind == ScheduleOp::ForwardCache;
    });
}

std::vector<int> Schedule::forwardsPerStage() const
{
    std::vector<int> n(std::size_t(m_stages), 0);
    for (const auto &op : m_ops)
        if (op.kind == ScheduleOp::ForwardKeep || op.kind == ScheduleOp::ForwardCache)
            ++n[std::size_t(op.stage)];
    return n;
}

std::string Schedule::toString() const
{
    std::string s;
    for (const auto &op : m_ops) {
        if (!s.empty())
            s.push_back(' ');
        switch (op.kind) {
        case ScheduleOp::ForwardKeep:
            s.append("F").append(std::to_string(op.stage));
            break;
        case ScheduleOp::ForwardCache:
            s.append("F").append(std::to_string(op.stage)).append("*");
            break;
        case ScheduleOp::Discard:
            s.append("D").append(std::to_string(op.stage));
            break;
        case ScheduleOp::Loss:
            s.append("L");
            break;
        case ScheduleOp::Backward:
            s.append("B").append(std::to_string(op.stage));
            break;
        }
    }
    return s;
}

} // namespace edgetrain::core
