#include "net/protocol/messages/coordinatorreplies.h"

#include "net/protocol/messages/fieldreader.h"

#include <QCborArray>

namespace edgetrain::net {

namespace {

constexpr std::int64_t kMaxCount = std::int64_t(1) << 50;
constexpr ReplyAction kActions[] = {
    ReplyAction::Start, ReplyAction::Continue, ReplyAction::Evaluate, ReplyAction::Regroup,
    ReplyAction::Stop,  ReplyAction::Finish,   ReplyAction::More};

/** A group the reply carries, read strictly (GroupSpec::fromCbor); a problem goes to `r`. */
std::optional<GroupSpec> readGroup(FieldReader &r, const char *key)
{
    if (!r.has(key))
        return std::nullopt;
    const QCborMap map = r.map(key);
    if (!r.ok())
        return std::nullopt;
    QString error;
    auto group = GroupSpec::fromCbor(map, &error);
    if (!group)
        r.fail(QStringLiteral("its %1: %2").arg(QLatin1String(key), error));
    return group;
}

} // namespace

QString actionName(ReplyAction action)
{
    switch (action) {
    case ReplyAction::Start:
        return QStringLiteral("start");
    case ReplyAction::Continue:
        return QStringLiteral("continue");
    case ReplyAction::Evaluate:
        return QStringLiteral("evaluate");
    case ReplyAction::Regroup:
        return QStringLiteral("regroup");
    case ReplyAction::Stop:
        return QStringLiteral("stop");
    case ReplyAction::Finish:
        return QStringLiteral("finish");
    case ReplyAction::More:
        return QStringLiteral("more");
    }
    return {};
}

std::optional<ReplyAction> parseAction(const QString &text)
{
    for (ReplyAction a : kActions)
        if (text == actionName(a))
            return a;
    return std::nullopt;
}

QCborMap TrainingReply::toCbor() const
{
    QCborMap m{{QStringLiteral("action"), actionName(action)}};
    if (group)
        m.insert(QStringLiteral("group"), group->toCbor());
    if (epoch)
        m.insert(QStringLiteral("epoch"), *epoch);
    if (next_group)
        m.insert(QStringLiteral("next_group"), next_group->toCbor());
    if (send_weights)
        m.insert(QStringLiteral("send_weights"), qint64(*send_weights));
    if (test_part) {
        m.insert(QStringLiteral("test_begin"), qint64(test_part->first));
        m.insert(QStringLiteral("test_end"), qint64(test_part->second));
    }
    if (weights)
        m.insert(QStringLiteral("weights"), *weights);
    if (!ranges.empty()) {
        QCborArray list;
        for (const auto &[first, count] : ranges)
            list.append(QCborArray{qint64(first), qint64(count)});
        m.insert(QStringLiteral("ranges"), list);
    }
    return m;
}

std::optional<TrainingReply> TrainingReply::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("reply"));
    TrainingReply t;
    const QString action = r.text("action", 32);
    if (r.ok()) {
        if (const auto a = parseAction(action))
            t.action = *a;
        else
            r.mustBe("action", "start, continue, evaluate, regroup, stop, finish or more");
    }
    t.group = readGroup(r, "group");
    if (r.has("epoch"))
        t.epoch = int(r.integer("epoch", 0, 1 << 30));
    t.next_group = readGroup(r, "next_group");
    if (r.has("send_weights"))
        t.send_weights = r.integer("send_weights", 0, 1 << 30);
    if (r.has("test_begin") || r.has("test_end"))
        t.test_part = std::make_pair(r.integer("test_begin", 0, kMaxCount),
                                     r.integer("test_end", 0, kMaxCount));
    if (r.has("weights"))
        t.weights = r.bytes("weights");
    const QCborArray ranges = r.has("ranges") ? r.array("ranges") : QCborArray();
    for (const QCborValue &range : ranges) {
        const QCborArray pair = range.toArray();
        if (!range.isArray() || pair.size() != 2 || !pair[0].isInteger() || !pair[1].isInteger()) {
            r.mustBe("ranges", "a list of [first, count] pairs of integers");
            break;
        }
        t.ranges.emplace_back(pair[0].toInteger(), pair[1].toInteger());
    }
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    return t;
}

QCborMap WeightsReply::toCbor() const
{
    if (stop)
        return QCborMap{{QStringLiteral("action"), actionName(ReplyAction::Stop)}};
    return QCborMap{{QStringLiteral("version"), qint64(version)},
                    {delta ? QStringLiteral("delta_bf16") : QStringLiteral("weights"), weights}};
}

std::optional<WeightsReply> WeightsReply::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("weights reply"));
    WeightsReply w;
    if (r.has("action")) {
        w.stop = true;
        if (r.text("action", 32) != actionName(ReplyAction::Stop) && r.ok())
            r.mustBe("action", "stop");
    } else {
        w.version = r.integer("version", 0, std::numeric_limits<std::int64_t>::max());
        w.delta = r.has("delta_bf16");
        w.weights = r.bytes(w.delta ? "delta_bf16" : "weights");
    }
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    return w;
}

QCborMap ExchangeProbeReply::toCbor() const
{
    return error.isEmpty() ? QCborMap() : QCborMap{{QStringLiteral("error"), error}};
}

ExchangeProbeReply ExchangeProbeReply::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("error")).toString()};
}

} // namespace edgetrain::net
