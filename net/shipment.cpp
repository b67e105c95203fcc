#include "shipment.h"

#include "core/error.h"

#include <QCborArray>
#include <QCryptographicHash>

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
    const qint64 index = chunk.value(QStringLiteral("index")).toInteger(-1);
    const qint64 total = chunk.value(QStringLiteral("total")).toInteger(-1);
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
        m_expected = header.value(QStringLiteral("bytes")).toInteger(-1);
        if (id.isEmpty() || total < 1 || total > 1 << 20 || m_expected < 0 ||
            m_expected > Shipment::kMaxBytes)
            return refuse(QStringLiteral("malformed header"));
        m_id = id;
        m_header = header;
        m_total = int(total);
        m_bytes.reserve(qsizetype(m_expected));
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
    for (const QCborValue &v : m_header.value(QStringLiteral("shape")).toArray()) {
        if (v.toInteger() < 1 || v.toInteger() > 65536 || dims.size() > 4)
            throw core::FormatError("shipment '" + m_id.toStdString() + "': absurd sample shape");
        dims.push_back(v.toInteger());
    }
    const core::Shape shape(dims);
    const std::int64_t samples = m_header.value(QStringLiteral("samples")).toInteger(-1);
    const int classes = int(m_header.value(QStringLiteral("classes")).toInteger(0));
    // Shipments from before detection training carry no label width: one class per sample.
    const std::int64_t labelWidth = m_header.value(QStringLiteral("label_width")).toInteger(1);
    if (dims.empty() || shape.numel() <= 0 || samples < 0 || classes < 1 || labelWidth < 1 ||
        labelWidth > (1 << 20) || samples * (shape.numel() * 4 + 4 * labelWidth) != m_bytes.size())
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
