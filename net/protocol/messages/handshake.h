#pragma once

#include <QByteArray>
#include <QCborMap>
#include <QString>

namespace edgetrain::net {

/*
 * The handshake's bodies (controlclient.cpp and nodeserver.cpp; Handshake in controlchannel.h
 * computes the proofs). They arrive before the peer is known, so they are read without trust:
 * a field of the wrong type reads as empty, and the reader refuses what does not prove the key
 * (a nonce of the wrong size, a proof that does not match) with its own sentence.
 */

/** "hello": the client's nonce and its protocol version. */
struct Hello
{
    QByteArray nonce;
    int protocol = 0;

    bool operator==(const Hello &other) const = default;
    QCborMap toCbor() const;
    static Hello fromCbor(const QCborMap &map);
};

/** "challenge": the node's nonce and its proof that it holds the cluster key. */
struct Challenge
{
    QByteArray nonce;
    QByteArray proof;

    bool operator==(const Challenge &other) const = default;
    QCborMap toCbor() const;
    static Challenge fromCbor(const QCborMap &map);
};

/** "auth": the client's proof that it holds the cluster key. */
struct Auth
{
    QByteArray proof;

    bool operator==(const Auth &other) const = default;
    QCborMap toCbor() const;
    static Auth fromCbor(const QCborMap &map);
};

/** "refused": why the node will not talk to this peer (it closes the connection). */
struct Refused
{
    QString reason;

    bool operator==(const Refused &other) const = default;
    QCborMap toCbor() const;
    static Refused fromCbor(const QCborMap &map);
};

/** The discovery probe a browser sends to a node's UDP port, padded to `padBytes` so that the
 *  node's answer (its NodeInfo) is no larger than what it was sent. */
struct ProbeDatagram
{
    int protocol = 0;

    QCborMap toCbor(int padBytes) const;
    /** Whether a datagram's map is a probe (beacons of other nodes and noise are not). */
    static bool isProbe(const QCborMap &map);
};

} // namespace edgetrain::net
