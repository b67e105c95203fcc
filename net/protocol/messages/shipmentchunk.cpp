#include "net/protocol/messages/shipmentchunk.h"

#include "net/protocol/cborfield.h"

#include <QCborArray>

namespace edgetrain::net {

QCborMap ShipmentHeader::toCbor() const
{
    QCborArray dims;
    for (std::int64_t d : shape)
        dims.append(qint64(d));
    QCborMap m{{QStringLiteral("description"), description},
               {QStringLiteral("shape"), dims},
               {QStringLiteral("classes"), qint64(classes)},
               {QStringLiteral("label_width"), qint64(label_width)},
               {QStringLiteral("samples"), qint64(samples)},
               {QStringLiteral("bytes"), qint64(bytes)}};
    if (!encoding.isEmpty()) {
        m.insert(QStringLiteral("encoding"), encoding);
        m.insert(QStringLiteral("palette"), palette);
    }
    return m;
}

ShipmentHeader ShipmentHeader::fromCbor(const QCborMap &map)
{
    ShipmentHeader h;
    h.description = map.value(QStringLiteral("description")).toString();
    const QCborArray dims = map.value(QStringLiteral("shape")).toArray();
    // At most one more than a shape may have, so that the assembler sees it is too long.
    for (qsizetype i = 0; i < dims.size() && i < 8; ++i)
        h.shape.push_back(cborInteger(dims[i]));
    h.classes = cborInteger(map.value(QStringLiteral("classes")), 0);
    h.label_width = cborInteger(map.value(QStringLiteral("label_width")), 1);
    h.samples = cborInteger(map.value(QStringLiteral("samples")), -1);
    h.bytes = cborInteger(map.value(QStringLiteral("bytes")), -1);
    h.encoding = map.value(QStringLiteral("encoding")).toString();
    h.palette = map.value(QStringLiteral("palette")).toByteArray();
    return h;
}

QCborMap ShipmentChunk::toCbor() const
{
    QCborMap m{{QStringLiteral("id"), id},
               {QStringLiteral("index"), qint64(index)},
               {QStringLiteral("total"), qint64(total)},
               {QStringLiteral("sha256"), sha256},
               {QStringLiteral("data"), data}};
    if (header)
        m.insert(QStringLiteral("header"), header->toCbor());
    return m;
}

ShipmentChunk ShipmentChunk::fromCbor(const QCborMap &map)
{
    ShipmentChunk c;
    c.id = map.value(QStringLiteral("id")).toString();
    c.index = cborInteger(map.value(QStringLiteral("index")), -1);
    c.total = cborInteger(map.value(QStringLiteral("total")), -1);
    c.sha256 = map.value(QStringLiteral("sha256")).toByteArray();
    c.data = map.value(QStringLiteral("data")).toByteArray();
    if (map.contains(QStringLiteral("header")))
        c.header = ShipmentHeader::fromCbor(map.value(QStringLiteral("header")).toMap());
    return c;
}

} // namespace edgetrain::net
