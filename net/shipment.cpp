#include "shipment.h"

#include "cborfield.h"
#include "core/error.h"

#include <QCborArray>
#include <QCryptographicHash>

#include <algorithm>
#include <cstring>

namespace edgetrain::net {

QList<QCborMap> Shipment::chunks(const core::TensorDataset &data, const QString &id, int chunkBytes)
{
    QByteArray bytes;
    const auto &images = data.images();
    const auto &labels = data.labels();
    bytes.resize(qsizetype(images.size() * sizeof(float) + labels.size() * sizeof(std::int32_t)));
    std::memcpy(bytes.data(), images.data(), images.size() * sizeof(float));
    std::memcpy(bytes.data() + images.size() * sizeof(float), labels.data(),
                labels.size() * sizeof(std::int32_t));
    QCborArray shape;
    const core::Shape sampleShape = data.sampleShape();
    for (std::int64_t d : sampleShape.dims())
        shape.append(qint64(d));
    const int total = int((bytes.size() + chunkBytes - 1) / chunkBytes);
    QList<QCborMap> out;
    for (int i = 0; i < std::max(total, 1); ++i) {
        const QByteArray piece = bytes.mid(qsizetype(i) * chunkBytes, chunkBytes);
        QCborMap c{
            {QStringLiteral("id"), id},
            {QStringLiteral("index"), i},
            {QStringLiteral("total"), std::max(total, 1)},
            {QStringLiteral("sha256"), QCryptographicHash::hash(piece, QCryptographicHash::Sha256)},
            {QStringLiteral("data"), piece}};
        if (i == 0)
            c.insert(QStringLiteral("header"),
                     QCborMap{{QStringLiteral("description"),
                               QString::fromStdString(data.description())},
                              {QStringLiteral("shape"), shape},
                              {QStringLiteral("classes"), data.classCount()},
                              {QStringLiteral("label_width"), data.labelWidth()},
                              {QStringLiteral("samples"), qint64(data.size())},
                              {QStringLiteral("bytes"), qint64(bytes.size())}});
        out.append(c);
    }
    return out;
}

bool ShipmentAssembler::add(const QCborMap &chunk, QString *error)
{
    const QString id = chunk.value(QStringLiteral("id")).toString();
    const qint64 index = cborInteger(chunk.value(QStringLiteral("index")), -1);
    const qint64 total = cborInteger(chunk.value(QStringLiteral("total")), -1);
    const QByteArray data = chunk.value(QStringLiteral("data")).toByteArray();
    const QByteArray sum = chunk.value(QStringLiteral("sha256")).toByteArray();
    auto refuse = [&](const QString &why) {
        *error = QStringLiteral("shipment '%1' chunk %2: %3").arg(id.left(64)).arg(index).arg(why);
        m_total = 0; // dead: nothing more is accepted
        m_next = 1;
        return false;
    };
    if (index == 0 && m_next == 0) {
        const QCborMap header = chunk.value(QStringLiteral("header")).toMap();
        m_expected = cborInteger(header.value(QStringLiteral("bytes")), -1);
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
    if (QCryptographicHash::hash(data, QCryptographicHash::Sha256) != sum)
        return refuse(QStringLiteral("checksum mismatch"));
    if (m_bytes.size() + data.size() > m_expected)
        return refuse(QStringLiteral("more data than the header announced"));
    m_bytes.append(data);
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
    for (const QCborValue &v : m_header.value(QStringLiteral("shape")).toArray()) {
        if (cborInteger(v) < 1 || cborInteger(v) > 65536 || dims.size() > 4 ||
            __builtin_mul_overflow(sampleValues, cborInteger(v), &sampleValues) ||
            sampleValues > Shipment::kMaxBytes)
            throw core::FormatError("shipment '" + m_id.toStdString() + "': absurd sample shape");
        dims.push_back(cborInteger(v));
    }
    const core::Shape shape(dims);
    const std::int64_t samples = cborInteger(m_header.value(QStringLiteral("samples")), -1);
    const int classes = int(cborInteger(m_header.value(QStringLiteral("classes")), 0));
    // Shipments from before detection training carry no label width: one class per sample.
    const std::int64_t labelWidth = cborInteger(m_header.value(QStringLiteral("label_width")), 1);
    std::int64_t bytes = 0;
    if (dims.empty() || samples < 0 || classes < 1 || labelWidth < 1 || labelWidth > (1 << 20) ||
        __builtin_mul_overflow(samples, sampleValues * 4 + 4 * labelWidth, &bytes) ||
        bytes != m_bytes.size())
        throw core::FormatError("shipment '" + m_id.toStdString() +
                                "': its header does not describe its data");
    std::vector<float> images(static_cast<std::size_t>(samples * shape.numel()));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(samples * labelWidth));
    std::memcpy(images.data(), m_bytes.constData(), images.size() * sizeof(float));
    std::memcpy(labels.data(), m_bytes.constData() + images.size() * sizeof(float),
                labels.size() * sizeof(std::int32_t));
    m_bytes.clear();
    return std::make_shared<core::TensorDataset>(
        m_header.value(QStringLiteral("description")).toString().toStdString() + " (shipped)",
        shape, classes, std::move(images), std::move(labels), int(labelWidth));
}

} // namespace edgetrain::net
