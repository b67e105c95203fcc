#pragma once

#include <QByteArray>
#include <QCborMap>
#include <QLatin1String>
#include <QString>
#include <QStringList>

#include <optional>

namespace edgetrain::net {

/**
 * A node's request to the rendezvous store the coordinator keeps for the collectives' setup
 * (RemoteStore on the node's side, gloo's Store): set a key, get one, or wait until several are
 * set; each is answered under its request id. Read from a message a node sent, so every field is
 * checked: keys are text of at most kMaxKeyChars, at most kMaxKeys of them, a value at most
 * kMaxValueBytes (gloo stores ranks' addresses: a few hundred bytes each).
 */
struct StoreRequest
{
    enum class Kind { Set, Get, Wait };
    static constexpr int kMaxKeyChars = 512;
    static constexpr int kMaxKeys = 1024;
    static constexpr qsizetype kMaxValueBytes = qsizetype(1) << 20;

    Kind kind = Kind::Get;
    qint64 request = -1;   // the reply's id (-1: none given)
    QStringList keys;      // Set and Get: one
    QByteArray value;      // Set
    qint64 timeout_ms = 0; // Get and Wait: how long the coordinator waits, 100 ms to 10 min

    /** The body of a store_set, store_get or store_wait (messageType()); the request id is
     *  JobLink's to add. */
    QCborMap toCbor() const;
    QLatin1String messageType() const;
    /** A store_set, store_get or store_wait body; std::nullopt and `error` saying which field
     *  is wrong otherwise (the request id is kept in `request` for the error's reply). */
    static std::optional<StoreRequest> fromCbor(const QString &type, const QCborMap &body,
                                                QString *error, qint64 *request = nullptr);
};

/** The coordinator's answer to a StoreRequest: done (Set, Wait), the value (Get), or why not. */
struct StoreReply
{
    QString error;
    std::optional<QByteArray> value;

    bool operator==(const StoreReply &other) const = default;
    QCborMap toCbor() const;
    static StoreReply fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net
