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
        m_layout = layoutOf(header, id);
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
    if (m_received + chunk.data.size() > m_expected)
        return refuse(QStringLiteral("more data than the header announced"));
    if (m_layout.error.empty() && m_decodeError.empty())
        decode(chunk.data);
    m_received += chunk.data.size();
    ++m_next;
    return true;
}

bool ShipmentAssembler::complete() const
{
    return m_total > 0 && m_next == m_total && m_received == m_expected;
}

ShipmentAssembler::Layout ShipmentAssembler::layoutOf(const ShipmentHeader &header,
                                                      const QString &id)
{
    Layout l;
    auto bad = [&](const std::string &why) {
        l.error = "shipment '" + id.toStdString() + "': " + why;
        return l;
    };
    std::int64_t sampleValues = 1; // checked: 65536^4 values would overflow
    for (const std::int64_t d : header.shape) {
        if (d < 1 || d > 65536 || l.dims.size() > 4 ||
            __builtin_mul_overflow(sampleValues, d, &sampleValues) ||
            sampleValues > Shipment::kMaxBytes)
            return bad("absurd sample shape");
        l.dims.push_back(d);
    }
    l.samples = header.samples;
    l.classes = int(header.classes);
    l.labelWidth = header.label_width;
    const QString &encoding = header.encoding;
    const bool paletted = encoding == QLatin1String(Shipment::kPalette8);
    if (!encoding.isEmpty() && !paletted)
        return bad("unknown sample encoding '" + encoding.left(32).toStdString() + "'");
    if (paletted) {
        const QByteArray &p = header.palette;
        if (p.isEmpty() || p.size() % qsizetype(sizeof(float)) != 0 ||
            p.size() > qsizetype(256 * sizeof(float)))
            return bad("its palette is not 1 to 256 floats");
        l.palette.resize(std::size_t(p.size()) / sizeof(float));
        std::memcpy(l.palette.data(), p.constData(), std::size_t(p.size()));
    }
    // Decoded, a palette shipment is four times its bytes on the wire: the same bound applies.
    std::int64_t decoded = 0;
    if (l.samples >= 0 && l.labelWidth >= 1 && l.labelWidth <= (1 << 20) &&
        (__builtin_mul_overflow(l.samples, sampleValues * 4 + 4 * l.labelWidth, &decoded) ||
         decoded > Shipment::kMaxBytes))
        return bad("its samples would take more than " + std::to_string(Shipment::kMaxBytes >> 20) +
                   " MiB decoded");
    const std::int64_t valueBytes = paletted ? 1 : 4;
    std::int64_t bytes = 0;
    if (l.dims.empty() || l.samples < 0 || l.classes < 1 || l.labelWidth < 1 ||
        l.labelWidth > (1 << 20) ||
        __builtin_mul_overflow(l.samples, sampleValues * valueBytes + 4 * l.labelWidth, &bytes) ||
        bytes != header.bytes)
        return bad("its header does not describe its data");
    l.imageBytes = l.samples * sampleValues * valueBytes;
    return l;
}

void ShipmentAssembler::makeRoom(std::size_t values)
{
    if (values <= m_images.capacity())
        return;
    // The announced size is trusted with memory only once an eighth of it has arrived (a header
    // alone buys nothing); from then on the values go straight into their final place.
    const std::size_t all =
        std::size_t(m_layout.palette.empty() ? m_layout.imageBytes / 4 : m_layout.imageBytes);
    m_images.reserve(m_received * 8 >= m_expected ? std::max(all, values)
                                                  : std::max(values, 2 * m_images.capacity()));
}

void ShipmentAssembler::decode(const QByteArray &bytes)
{
    // The part of these bytes that is sample values, then the part that is labels.
    const std::int64_t start = m_received, end = m_received + bytes.size();
    const std::int64_t imageEnd = std::min(end, m_layout.imageBytes);
    const char *data = bytes.constData();
    if (start < imageEnd)
        makeRoom(std::size_t(m_layout.palette.empty() ? (imageEnd + 3) / 4 : imageEnd));
    if (start < imageEnd) {
        const std::int64_t n = imageEnd - start;
        if (!m_layout.palette.empty()) {
            const auto *index = reinterpret_cast<const std::uint8_t *>(data);
            const std::size_t first = m_images.size();
            m_images.resize(first + std::size_t(n));
            for (std::int64_t i = 0; i < n; ++i) {
                if (index[i] >= m_layout.palette.size()) {
                    m_decodeError = "shipment '" + m_id.toStdString() + "': value " +
                                    std::to_string(start + i) + " indexes past its palette of " +
                                    std::to_string(m_layout.palette.size());
                    return;
                }
                m_images[first + std::size_t(i)] = m_layout.palette[index[i]];
            }
        } else {
            // float32 values may straddle two chunks: copy bytes at their offset.
            m_images.resize(std::size_t((imageEnd + 3) / 4));
            std::memcpy(reinterpret_cast<char *>(m_images.data()) + start, data, std::size_t(n));
        }
    }
    if (end > m_layout.imageBytes) {
        const std::int64_t from = std::max(start, m_layout.imageBytes) - start;
        m_labels.append(data + from, qsizetype(bytes.size() - from));
    }
}

std::shared_ptr<core::TensorDataset> ShipmentAssembler::take()
{
    if (!complete())
        throw core::FormatError("shipment '" + m_id.toStdString() + "' is incomplete");
    if (!m_layout.error.empty())
        throw core::FormatError(m_layout.error);
    if (!m_decodeError.empty())
        throw core::FormatError(m_decodeError);
    std::vector<std::int32_t> labels(std::size_t(m_labels.size()) / sizeof(std::int32_t));
    std::memcpy(labels.data(), m_labels.constData(), labels.size() * sizeof(std::int32_t));
    m_labels.clear();
    return std::make_shared<core::TensorDataset>(
        m_header.description.toStdString() + " (shipped)", core::Shape(m_layout.dims),
        m_layout.classes, std::move(m_images), std::move(labels), int(m_layout.labelWidth));
}

} // namespace edgetrain::net
