#include "repeatability.h"

#include <QCryptographicHash>
#include <QFile>
#include <QStringList>

#include <cmath>

namespace edgetrain::app {

namespace {

bool sameShares(const std::vector<double> &a, const std::vector<double> &b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > 1e-9)
            return false;
    return true;
}

QString sha256(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    if (!hash.addData(&file))
        return {};
    return QString::fromLatin1(hash.result().toHex());
}

} // namespace

RunRepeatability runRepeatability(const Session &session)
{
    const TrainingRecord &t = session.training;
    RunRepeatability r;
    r.nodes = int(t.nodes.size());
    for (const net::ClusterEpoch &e : t.epochs)
        r.sharesRecorded = r.sharesRecorded || !e.shares.empty();
    for (size_t i = 1; i < t.epochs.size(); ++i)
        if (!sameShares(t.epochs[i].shares, t.epochs[i - 1].shares))
            ++r.shareChanges;
    for (const net::ClusterEvent &e : t.events)
        if (e.kind == net::ClusterEventKind::Regrouped)
            ++r.regroups;
    if (!t.weights.isEmpty())
        r.weightsSha256 = sha256(session.path(t.weights));
    return r;
}

QString repeatabilityText(const RunRepeatability &r)
{
    if (r.nodes < 2)
        return {};
    QStringList moved;
    if (r.shareChanges > 0)
        moved << QStringLiteral("the shares moved in %1")
                     .arg(r.shareChanges == 1 ? QStringLiteral("1 epoch")
                                              : QStringLiteral("%1 epochs").arg(r.shareChanges));
    if (r.regroups > 0)
        moved << QStringLiteral("the devices formed a new group %1")
                     .arg(r.regroups == 1 ? QStringLiteral("once")
                                          : QStringLiteral("%1 times").arg(r.regroups));
    const QString what =
        moved.isEmpty() && !r.sharesRecorded ? QStringLiteral("this session did not record them")
        : moved.isEmpty()                    ? QStringLiteral("in this run they never moved")
                          : QStringLiteral("in this run ") + moved.join(QStringLiteral(" and "));
    QString text =
        QStringLiteral(
            "Training on several devices is repeatable only up to float rounding: each device's "
            "share of a batch follows its measured speed (%1), and another split sums the same "
            "gradients in another order. Two runs of one session (in the window and headless, "
            "say) can therefore differ by a detection or two near the threshold or IoU 0.5.")
            .arg(what);
    if (!r.weightsSha256.isEmpty())
        text += QStringLiteral(" Two reports scored the same student when its weights' SHA-256 "
                               "match: here it begins %1.")
                    .arg(r.weightsSha256.left(16));
    return text;
}

} // namespace edgetrain::app
