#pragma once

#include "core/tensordataset.h"
#include "net/protocol/messages/shipmentchunk.h"

#include <QCborMap>
#include <QList>
#include <QString>

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::net {

/**
 * A dataset sent from the coordinator to a node in chunks, each with its SHA-256, so a node can
 * train on data it does not have (the student's crops or frames). Labels travel as int32
 * (label_width per sample; a header without it means 1), little-endian, after a header chunk
 * that describes them. Samples travel as float32, or — where all their values are at most 256
 * distinct floats, as images made from 8-bit pixels are — as one byte per value indexing a
 * palette of those floats in the header ("encoding": "palette8"): a quarter of the bytes, and
 * bit for bit the same dataset on the node.
 */
namespace Shipment {
constexpr int kDefaultChunkBytes = 1 << 20;
constexpr std::int64_t kMaxBytes = std::int64_t(4) << 30; // on the wire, and decoded
/** The one-byte-per-value encoding's name in headers and in NodeInfo::shipment_encodings. */
constexpr const char *kPalette8 = "palette8";

/** The frames' bodies ("data_chunk", ShipmentChunk), in order; samples as palette8 where `palette8`
 * is allowed (every receiving node decodes it) and the values fit, else as float32. */
QList<QCborMap> chunks(const core::TensorDataset &data, const QString &id,
                       int chunkBytes = kDefaultChunkBytes, bool palette8 = true);

/** The at most 256 distinct values of `values` (bit patterns, in first-seen order) and each
 *  value's index in them; false (and nothing useful in the outputs) if there are more. */
bool palette(const std::vector<float> &values, std::vector<float> *distinct,
             std::vector<std::uint8_t> *indices);
} // namespace Shipment

/**
 * Reassembles one shipment on the node. Refuses (with the chunk index and reason) a chunk whose
 * checksum does not match, that does not belong, comes out of order or would exceed the size
 * announced in the header. Each chunk is decoded as it arrives: a board decoding a whole
 * frame dataset at the end stalled its agent for seconds, long enough to be taken for lost.
 */
class ShipmentAssembler
{
public:
    /** Takes one chunk (a ShipmentChunk's body); false with a message if it is refused (the
     *  shipment is then dead). */
    bool add(const QCborMap &chunk, QString *error);
    bool complete() const;
    const QString &id() const { return m_id; }
    /** The dataset, once complete; throws core::Error if the header does not describe it. */
    std::shared_ptr<core::TensorDataset> take();

private:
    /** What the header says the bytes are, checked; `error` set if it does not describe them. */
    struct Layout
    {
        std::vector<std::int64_t> dims;
        std::int64_t samples = 0, labelWidth = 1, imageBytes = 0;
        int classes = 0;
        std::vector<float> palette; // empty: float32 values
        std::string error;
    };
    static Layout layoutOf(const ShipmentHeader &header, const QString &id);
    void makeRoom(std::size_t values);
    void decode(const QByteArray &bytes);

    QString m_id;
    ShipmentHeader m_header;
    Layout m_layout;
    std::vector<float> m_images; // decoded so far
    QByteArray m_labels;         // int32 little-endian, as they came
    std::string m_decodeError;   // the first value that could not be decoded
    std::int64_t m_received = 0;
    int m_next = 0;
    int m_total = -1;
    std::int64_t m_expected = 0;
};

} // namespace edgetrain::net
