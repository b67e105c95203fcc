#pragma once

#include <QByteArray>
#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>

namespace edgetrain::net {

/*
 * A deployment (coordinator ↔ node; the message types are in protocol.h): the model file in
 * chunks (DeployModel), the start (DeployStart), the node's answer (DeployAccepted, or a Failure
 * as deploy_refused), its reports about once a second (DeployReport), and the end (deploy_stop
 * asks, deploy_stopped confirms, deploy_failed says the run broke on the node). Each body reads
 * back with fromCbor(map, &error): a body that lacks a field or holds one of the wrong type is
 * refused with a sentence naming the message and the field (FieldReader).
 */

/** "deploy_model": one piece of the model file. Every chunk carries the whole file's size and
 *  SHA-256, so the node can refuse an oversized file at its first chunk and check the whole
 *  once the last has arrived. */
struct DeployModel
{
    QString id;                  // the deployment's, repeated by deploy_start
    std::int64_t index = 0;      // from 0
    std::int64_t total = 0;      // chunks
    std::int64_t file_bytes = 0; // the whole file's size
    QByteArray sha256;           // the whole file's
    QByteArray data;

    /** A chunk's data at most (the frame limit leaves room for the rest of the body). */
    static constexpr qsizetype kChunkBytes = qsizetype(4) << 20;

    bool operator==(const DeployModel &other) const = default;
    QCborMap toCbor() const;
    static std::optional<DeployModel> fromCbor(const QCborMap &map, QString *error);
};

/** "deploy_start": run the model that arrived under `id` on the node's camera; stop by itself
 *  when the session that sent this is gone longer than `grace_ms`. */
struct DeployStart
{
    QString id;
    std::int64_t grace_ms = 10000;

    bool operator==(const DeployStart &other) const = default;
    QCborMap toCbor() const;
    static std::optional<DeployStart> fromCbor(const QCborMap &map, QString *error);
};

/** "deploy_accepted": the model passed the node's checks and runs on `source`, the node's name
 *  for its camera ("vtest.avi", "camera:0"). */
struct DeployAccepted
{
    QString id;
    QString source;

    bool operator==(const DeployAccepted &other) const = default;
    QCborMap toCbor() const;
    static std::optional<DeployAccepted> fromCbor(const QCborMap &map, QString *error);
};

/** "deploy_report": the running student's figures since the start and over the last second,
 *  with the latest frame (a JPEG, its boxes drawn). */
struct DeployReport
{
    QString source;
    QByteArray jpeg;
    std::int64_t frame_detections = 0; // boxes in the JPEG's frame
    std::int64_t frames = 0;           // since the start
    std::int64_t detections = 0;       // since the start
    double fps = 0.0;                  // over the last second
    double latency_ms_p50 = 0.0;       // one frame's inference, over the last second
    double latency_ms_p95 = 0.0;
    double cpu_percent = 0.0; // the node process; 100 is one core busy
    std::int64_t rss_bytes = 0;

    /** A report's JPEG at most. */
    static constexpr qsizetype kMaxJpegBytes = qsizetype(1) << 20;

    bool operator==(const DeployReport &other) const = default;
    QCborMap toCbor() const;
    static std::optional<DeployReport> fromCbor(const QCborMap &map, QString *error);
};

} // namespace edgetrain::net
