#include "core/error.h"
#include "core/tensordataset.h"
#include "net/training/shipment.h"

#include <QTest>

#include <cstring>

using namespace edgetrain;

/** The node decodes a shipment chunk by chunk (ShipmentAssembler); these cut the chunks where a
 *  value, a sample or the labels begin mid-chunk, and compare the dataset bit for bit. */
class TestShipment : public QObject
{
    Q_OBJECT

private:
    static core::TensorDataset dataset(bool eightBit)
    {
        std::vector<float> images(13 * 3 * 5 * 7);
        for (std::size_t i = 0; i < images.size(); ++i)
            images[i] = eightBit ? float((i * 37) % 251) / 255.0f : float(i) * 0.001f - 0.3f;
        std::vector<std::int32_t> labels(13 * 2);
        for (std::size_t i = 0; i < labels.size(); ++i)
            labels[i] = std::int32_t(i * 7 % 5);
        return {"shapes", core::Shape{3, 5, 7}, 5, images, labels, 2};
    }

    static std::shared_ptr<core::TensorDataset> roundTrip(const core::TensorDataset &data,
                                                          int chunkBytes, bool palette8)
    {
        net::ShipmentAssembler assembler;
        QString error;
        for (const QCborMap &c :
             net::Shipment::chunks(data, QStringLiteral("s"), chunkBytes, palette8))
            if (!assembler.add(c, &error))
                qFatal("refused: %s", qPrintable(error));
        if (!assembler.complete())
            qFatal("not complete");
        return assembler.take();
    }

private Q_SLOTS:
    void chunksCutAnywhere_data()
    {
        QTest::addColumn<int>("chunkBytes");
        QTest::addColumn<bool>("eightBit");
        for (int bytes : {1, 3, 5, 101, 1001, 1 << 20}) {
            QTest::addRow("float32, %d-byte chunks", bytes) << bytes << false;
            QTest::addRow("palette8, %d-byte chunks", bytes) << bytes << true;
        }
    }

    void chunksCutAnywhere()
    {
        QFETCH(int, chunkBytes);
        QFETCH(bool, eightBit);
        const core::TensorDataset data = dataset(eightBit);
        const auto back = roundTrip(data, chunkBytes, eightBit);
        QCOMPARE(back->size(), data.size());
        QCOMPARE(back->labelWidth(), 2);
        QCOMPARE(back->labels(), data.labels());
        QCOMPARE(back->images().size(), data.images().size());
        QVERIFY(std::memcmp(back->images().data(), data.images().data(),
                            data.images().size() * sizeof(float)) == 0);
    }

    void aBadValueIsRefusedAtTheEnd()
    {
        // A palette cut to 8 entries: the first value past it is named when the dataset is
        // taken, whichever chunk it came in.
        const core::TensorDataset data = dataset(true);
        QList<QCborMap> chunks = net::Shipment::chunks(data, QStringLiteral("s"), 64, true);
        QCborMap header = chunks[0].value(QStringLiteral("header")).toMap();
        const QByteArray palette = header.value(QStringLiteral("palette")).toByteArray();
        header.insert(QStringLiteral("palette"), palette.left(8 * 4));
        chunks[0].insert(QStringLiteral("header"), header);
        net::ShipmentAssembler assembler;
        QString error;
        for (const QCborMap &c : chunks)
            QVERIFY2(assembler.add(c, &error), qPrintable(error));
        QVERIFY(assembler.complete());
        try {
            assembler.take();
            QFAIL("a value past the palette was taken");
        } catch (const core::FormatError &e) {
            QVERIFY2(QByteArray(e.what()).contains("indexes past its palette of 8"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestShipment)
#include "tst_shipment.moc"
