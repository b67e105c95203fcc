#pragma once

#include <QByteArray>
#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::net {

/** What the first chunk of a shipment says about the dataset it carries (Shipment in
 *  net/training/shipment.h makes and reassembles them). */
struct ShipmentHeader
{
    QString description;
    std::vector<std::int64_t> shape; // one sample's
    std::int64_t classes = 0;
    /** Labels per sample; a header from before detection training has none: 1. */
    std::int64_t label_width = 1;
    std::int64_t samples = -1;
    std::int64_t bytes = -1; // all the chunks' data together
    /** How samples travel: empty for float32, or Shipment::kPalette8 (one byte per value
     *  indexing `palette`, float32 values). */
    QString encoding;
    QByteArray palette;

    bool operator==(const ShipmentHeader &other) const = default;
    QCborMap toCbor() const;
    static ShipmentHeader fromCbor(const QCborMap &map);
};

/**
 * "data_chunk": one piece of a shipment, with its SHA-256. Read leniently: what a field of the
 * wrong type or a missing one reads as (-1 for numbers, 0 for a shape's entry) is what
 * ShipmentAssembler refuses, with the chunk's index and the reason, so every check on a chunk
 * is in one place.
 */
struct ShipmentChunk
{
    QString id;
    std::int64_t index = -1;
    std::int64_t total = -1;
    QByteArray sha256;
    QByteArray data;
    std::optional<ShipmentHeader> header; // the first chunk's

    bool operator==(const ShipmentChunk &other) const = default;
    QCborMap toCbor() const;
    static ShipmentChunk fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net
