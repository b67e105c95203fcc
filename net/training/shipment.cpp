#include "net/training/shipment.h"

#include "core/error.h"

#include <QCborArray>
#include <QCryptographicHash>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace edgetrain::net {

bool Shipment::palette(const std::vector<float> &values, std::vector<float> *distinct,
                       std::vector<std::uint8_t> *indices)
{
    // Open addressing on the values' bit patterns: 1024 slots for at most 256 keys.
    constexpr std::uint32_t kSlots = 1024;
    std::array<std::uint32_t, kSlots> keys{};
    std::array<std::int16_t, kSlots> slots;
    slots.fill(-1);
    distinct->clear();
    indices->resize(values.size());
    std::uint32_t lastBits = 0;
    int lastIndex = -1; // runs of equal values (backgrounds, padding) skip the hash
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, &values[i], sizeof bits);
        if (lastIndex >= 0 && bits == lastBits) {
            (*indices)[i] = std::uint8_t(lastIndex);
            continue;
        }
        std::uint32_t slot = (bits * 2654435761u) >> 22;
        while (slots[slot] >= 0 && keys[slot] != bits)
            slot = (slot + 1) % kSlots;
        if (slots[slot] < 0) {
            if (distinct->size() == 256)
                return false;
            keys[slot] = bits;
            slots[slot] = std::int16_t(distinct->size());
            distinct->push_back(values[i]);
        }
        lastBits = bits;
        lastIndex = slots[slot];
        (*indices)[i] = std::uint8_t(lastIndex);
    }
    return true;
}

QList<QCborMap> Shipment::chunks(const core::TensorDataset &data, const QString &id, int chunkBytes,
                                 bool palette8)
{
    QByteArray bytes;
    const auto &images = data.images();
    const auto &labels = data.labels();
    std::vector<float> distinct;
    std::vector<std::uint8_t> indices;
    const bool paletted = palette8 && !images.empty() && palette(images, &distinct, &indices);
    const std::size_t imageBytes = paletted ? indices.size() : images.size() * sizeof(float);
    bytes.resize(qsizetype(imageBytes + labels.size() * sizeof(std::int32_t)));
    std::memcpy(bytes.data(), paletted ? static_cast<const void *>(indices.data()) : images.data(),
                imageBytes);
    std::memcpy(bytes.data() + imageBytes, labels.data(), labels.size() * sizeof(std::int32_t));
    ShipmentHeader header;
    header.description = QString::fromStdString(data.description());
    const core::Shape sampleShape = data.sampleShape();
    header.shape.assign(sampleShape.dims().begin(), sampleShape.dims().end());
    header.classes = data.classCount();
    header.label_width = data.labelWidth();
    header.samples = data.size();
    header.bytes = bytes.size();
    if (paletted) {
        header.encoding = QString::fromLatin1(kPalette8);
        header.palette = QByteArray(reinterpret_cast<const char *>(distinct.data()),
                                    qsizetype(distinct.size() * sizeof(float)));
    }
    const int total = int((bytes.size() + chunkBytes - 1) / chunkBytes);
    QList<QCborMap> out;
    for (int i = 0; i < std::max(total, 1); ++i) {
        ShipmentChunk c;
        c.id = id;
        c.index = i;
        c.total = std::max(total, 1);
        c.data = bytes.mid(qsizetype(i) * chunkBytes, chunkBytes);
        c.sha256 = QCryptographicHash::hash(c.data, QCryptographicHash::Sha256);
        if (i == 0)
            c.header = header;
        out.append(c.toCbor());
    }
    return out;
}

bool ShipmentAssembler::add(const QCborMap &body, QString *error)
{
    const ShipmentChunk chunk = ShipmentChunk::fromCbor(body);
    const QString &id = chunk.id;
    const qint64 index = chunk.index;
    const qint64 total = chunk.total;
    auto refuse = [&](const QString &why) {
        *error = QStringLiteral("shipment '%1' chunk %2: %3").arg(id.left(64)).arg(index).arg(why);
        m_total = 0; // dead: nothing more is accepted
        m_next = 1;
        return false;
    };
    if (index == 0 && m_next == 0) {
        const ShipmentHeader header = chunk.header.value_or(ShipmentHeader());
        m_expected = header.bytes;
        if (id.isEmpty() || total < 1 || total > 1 << 20 || m_expected < 0 ||
            m_expected > Shipment::kMaxBytes)
            return refuse(QStringLiteral("malformed header"));
        m_id = id;
        m_header = header;
        m_total = int(total);
        // The announced size is not trusted with memory: the bytes grow as chunks arrive.
        m_bytes.reserve(
            qsizetype(std::min<std::int64_t>(m_expected, Shipment::kDefaultChunkBytes)));
    } else if (m_total < 0) {
        return refuse(QStringLiteral("arrived before the header chunk"));
    }
    if (id != m_id || total != m_total || index != m_next)
        return refuse(
            QStringLiteral("out of order or from another shipment (expected chunk %1 of '%2')")
                .arg(m_next)
                .arg(m_id));
    if (QCryptographicHash::hash(chunk.data, QCryptographicHash::Sha256) != chunk.sha256)
        return refuse(QStringLiteral("checksum mismatch"));
    if (m_bytes.size() + chunk.data.size() > m_expected)
        return refuse(QStringLiteral("more data than the header announced"));
    m_bytes.append(chunk.data);
    ++m_next;
    return true;
}

bool ShipmentAssembler::complete() const
{
    return m_total > 0 && m_next == m_total && m_bytes.size() == m_expected;
}

std::shared_ptr<core::TensorDataset> ShipmentAssembler::take()
{
    if (!complete())
        throw core::FormatError("shipment '" + m_id.toStdString() + "' is incomplete");
    std::vector<std::int64_t> dims;
    std::int64_t sampleValues = 1; // checked: 65536^4 values would overflow
    for (const std::int64_t d : m_header.shape) {
        if (d < 1 || d > 65536 || dims.size() > 4 ||
            __builtin_mul_overflow(sampleValues, d, &sampleValues) ||
            sampleValues > Shipment::kMaxBytes)
            throw core::FormatError("shipment '" + m_id.toStdString() + "': absurd sample shape");
        dims.push_back(d);
    }
    const core::Shape shape(dims);
    const std::int64_t samples = m_header.samples;
    const int classes = int(m_header.classes);
    const std::int64_t labelWidth = m_header.label_width;
    auto bad = [&](const std::string &why) {
        return core::FormatError("shipment '" + m_id.toStdString() + "': " + why);
    };
    const QString &encoding = m_header.encoding;
    const bool paletted = encoding == QLatin1String(Shipment::kPalette8);
    if (!encoding.isEmpty() && !paletted)
        throw bad("unknown sample encoding '" + encoding.left(32).toStdString() + "'");
    std::vector<float> palette;
    if (paletted) {
        const QByteArray &p = m_header.palette;
        if (p.isEmpty() || p.size() % qsizetype(sizeof(float)) != 0 ||
            p.size() > qsizetype(256 * sizeof(float)))
            throw bad("its palette is not 1 to 256 floats");
        palette.resize(std::size_t(p.size()) / sizeof(float));
        std::memcpy(palette.data(), p.constData(), std::size_t(p.size()));
    }
    // Decoded, a palette shipment is four times its bytes on the wire: the same bound applies.
    std::int64_t decoded = 0;
    if (samples >= 0 && labelWidth >= 1 && labelWidth <= (1 << 20) &&
        (__builtin_mul_overflow(samples, sampleValues * 4 + 4 * labelWidth, &decoded) ||
         decoded > Shipment::kMaxBytes))
        throw bad("its samples would take more than " + std::to_string(Shipment::kMaxBytes >> 20) +
                  " MiB decoded");
    const std::int64_t valueBytes = paletted ? 1 : 4;
    std::int64_t bytes = 0;
    if (dims.empty() || samples < 0 || classes < 1 || labelWidth < 1 || labelWidth > (1 << 20) ||
        __builtin_mul_overflow(samples, sampleValues * valueBytes + 4 * labelWidth, &bytes) ||
        bytes != m_bytes.size())
        throw bad("its header does not describe its data");
    std::vector<float> images(static_cast<std::size_t>(samples * shape.numel()));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(samples * labelWidth));
    const std::size_t imageBytes = images.size() * std::size_t(valueBytes);
    if (paletted) {
        const auto *index = reinterpret_cast<const std::uint8_t *>(m_bytes.constData());
        for (std::size_t i = 0; i < images.size(); ++i) {
            if (index[i] >= palette.size())
                throw bad("value " + std::to_string(i) + " indexes past its palette of " +
                          std::to_string(palette.size()));
            images[i] = palette[index[i]];
        }
    } else {
        std::memcpy(images.data(), m_bytes.constData(), imageBytes);
    }
    std::memcpy(labels.data(), m_bytes.constData() + imageBytes,
                labels.size() * sizeof(std::int32_t));
    m_bytes.clear();
    return std::make_shared<core::TensorDataset>(m_header.description.toStdString() + " (shipped)",
                                                 shape, classes, std::move(images),
                                                 std::move(labels), int(labelWidth));
}

} // namespace edgetrain::net
