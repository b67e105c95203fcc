// Bad input gets a clear error that says what and where: IDX files, JSON, ModelSpecs,
// safetensors. Nothing crashes, and a failed load leaves the model as it was.

#include "core/error.h"
#include "core/fashionmnist.h"
#include "core/fieldcheck.h"
#include "core/idxfile.h"
#include "core/json.h"
#include "core/lrschedule.h"
#include "core/model.h"
#include "core/numbertext.h"
#include "core/safetensors.h"
#include "core/zoo.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <zlib.h>

#include <clocale>
#include <limits>
#include <sys/resource.h>

using namespace edgetrain::core;

namespace {

QByteArray idxBytes(std::vector<std::uint32_t> dims, int values, unsigned char type = 0x08)
{
    QByteArray b;
    b.append(char(0)).append(char(0)).append(char(type)).append(char(dims.size()));
    for (auto d : dims)
        for (int s = 24; s >= 0; s -= 8)
            b.append(char((d >> s) & 0xff));
    for (int i = 0; i < values; ++i)
        b.append(char(i % 10));
    return b;
}

void writeGz(const QString &path, const QByteArray &data)
{
    gzFile f = gzopen(path.toLocal8Bit().constData(), "wb");
    QVERIFY(f);
    gzwrite(f, data.constData(), unsigned(data.size()));
    gzclose(f);
}

void writeRaw(const QString &path, const QByteArray &data)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
}

/** Runs fn, expects an exception of type E whose message contains every fragment. */
template <typename E, typename Fn>
void expectError(Fn fn, std::initializer_list<const char *> fragments)
{
    try {
        fn();
    } catch (const E &e) {
        for (const char *f : fragments)
            QVERIFY2(QString::fromUtf8(e.what()).contains(QString::fromUtf8(f)),
                     qPrintable(QStringLiteral("'%1' lacks '%2'")
                                    .arg(QString::fromUtf8(e.what()), QString::fromUtf8(f))));
        return;
    } catch (const std::exception &e) {
        QFAIL(qPrintable(
            QStringLiteral("wrong exception type: %1").arg(QString::fromUtf8(e.what()))));
    }
    QFAIL("no exception");
}

} // namespace

class TestFormats : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void idxReadsGzipAndPlain();
    void idxErrors();
    void fashionMnistMismatch();
    void jsonErrorsNameLineAndColumn();
    void jsonRoundTrip();
    void jsonIntegersAreExact();
    void numbersIgnoreTheLocale();
    void fieldCheckWording();
    void modelSpecErrors_data();
    void modelSpecErrors();
    void safetensorsErrors();

private:
    QTemporaryDir m_dir;
    QString path(const char *name) const
    {
        return m_dir.path() + QLatin1Char('/') + QLatin1String(name);
    }
};

void TestFormats::idxReadsGzipAndPlain()
{
    writeGz(path("a.gz"), idxBytes({2, 3}, 6));
    const IdxFile a = IdxFile::read(path("a.gz").toStdString());
    QCOMPARE(a.dims, (std::vector<std::int64_t>{2, 3}));
    QCOMPARE(a.values[5], std::uint8_t(5));
    writeRaw(path("b.idx"), idxBytes({4}, 4));
    QCOMPARE(IdxFile::read(path("b.idx").toStdString()).values.size(), std::size_t(4));
}

void TestFormats::idxErrors()
{
    expectError<IoError>([&] { IdxFile::read(path("missing.gz").toStdString()); },
                         {"missing.gz", "cannot open"});
    writeGz(path("short.gz"), idxBytes({10, 28, 28}, 100));
    expectError<FormatError>([&] { IdxFile::read(path("short.gz").toStdString()); },
                             {"short.gz", "truncated", "7840 values", "100"});
    QByteArray wrongMagic = idxBytes({3}, 3);
    wrongMagic[0] = 0x1f;
    writeGz(path("magic.gz"), wrongMagic);
    expectError<FormatError>([&] { IdxFile::read(path("magic.gz").toStdString()); },
                             {"magic.gz", "not an IDX file", "offset 0"});
    writeGz(path("float.gz"), idxBytes({3}, 12, 0x0d));
    expectError<FormatError>([&] { IdxFile::read(path("float.gz").toStdString()); },
                             {"type 13", "offset 2"});
    writeGz(path("extra.gz"), idxBytes({3}, 5));
    expectError<FormatError>([&] { IdxFile::read(path("extra.gz").toStdString()); },
                             {"unexpected data after"});
    // A gzip stream cut in the middle (a partial download).
    QByteArray big;
    for (int i = 0; i < 5000; ++i)
        big.append(char((i * 131) % 251));
    writeGz(path("full.gz"), idxBytes({5000}, 0) + big);
    QFile full(path("full.gz"));
    QVERIFY(full.open(QIODevice::ReadOnly));
    writeRaw(path("cut.gz"), full.readAll().left(int(full.size() / 2)));
    expectError<FormatError>([&] { IdxFile::read(path("cut.gz").toStdString()); }, {"cut.gz"});
    // Dimensions whose product wraps around 2^64 (to 0 values) are refused, not read as empty.
    writeRaw(path("wrap.idx"), idxBytes({1u << 17, 1u << 17, 1u << 30}, 0));
    expectError<FormatError>([&] { IdxFile::read(path("wrap.idx").toStdString()); },
                             {"wrap.idx", "absurdly large", "dimension 2", "offset 12"});
    // The header is not trusted with memory (fuzz_files' finding, minimized): 8 bytes promising
    // 4 GiB of values are refused as truncated without the 4 GiB being allocated first.
    writeRaw(path("promise.idx"), idxBytes({0xffff0000u}, 0));
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    expectError<FormatError>([&] { IdxFile::read(path("promise.idx").toStdString()); },
                             {"promise.idx", "truncated", "4294901760 values", "after 0"});
    getrusage(RUSAGE_SELF, &after);
    QVERIFY2(after.ru_maxrss - before.ru_maxrss < 256 * 1024, // KiB
             qPrintable(QStringLiteral("peak RSS grew by %1 MiB")
                            .arg((after.ru_maxrss - before.ru_maxrss) / 1024)));
}

void TestFormats::fashionMnistMismatch()
{
    QTemporaryDir dir;
    writeGz(dir.path() + QStringLiteral("/t10k-images-idx3-ubyte.gz"), idxBytes({3, 2, 2}, 12));
    writeGz(dir.path() + QStringLiteral("/t10k-labels-idx1-ubyte.gz"), idxBytes({2}, 2));
    expectError<FormatError>(
        [&] { FashionMnist::load(dir.path().toStdString(), FashionMnist::Split::Test); },
        {"3 images", "2 labels"});
    expectError<IoError>(
        [&] { FashionMnist::load(dir.path().toStdString(), FashionMnist::Split::Train); },
        {"train-images-idx3-ubyte.gz"});
}

void TestFormats::jsonErrorsNameLineAndColumn()
{
    expectError<FormatError>([] { Json::parse("{\n  \"a\": [1, 2,\n  }", "spec.json"); },
                             {"spec.json:3:3"});
    expectError<FormatError>([] { Json::parse("{\"a\": 1, \"a\": 2}", "x"); },
                             {"duplicate key \"a\""});
    expectError<FormatError>([] { Json::parse("[1] 2", "x"); }, {"after the JSON value"});
    expectError<FormatError>([] { Json::parse("\"abc", "x"); }, {"unterminated string"});
    expectError<FormatError>([] { Json::parse(std::string(100, '['), "x"); }, {"nesting"});
}

void TestFormats::jsonRoundTrip()
{
    const Json j = Json::parse(
        R"({"s": "a\"b\\c\u00e9\n", "n": -1.5e3, "i": 42, "t": true, "z": null, "a": [1, {"k": []}]})");
    QCOMPARE(Json::parse(j.dump()).dump(), j.dump());
    QCOMPARE(j.find("n")->toDouble(), -1500.0);
    QCOMPARE(j.find("s")->toString(), std::string("a\"b\\c\xc3\xa9\n"));
    QCOMPARE(j.find("i")->toInt(), std::int64_t(42));
}

void TestFormats::jsonIntegersAreExact()
{
    // Above 2^53 a double cannot hold every integer: byte counts, seeds and offsets must not move.
    const std::int64_t big = 9007199254740993; // 2^53 + 1
    const Json parsed = Json::parse("[9007199254740993, -9223372036854775808, 9223372036854775807, "
                                    "9223372036854775808, 2.5, 1e3, 0]");
    const auto &a = parsed.toArray();
    QVERIFY(a[0].isInteger());
    QCOMPARE(a[0].toInt(), big);
    QCOMPARE(a[1].toInt(), std::numeric_limits<std::int64_t>::min());
    QCOMPARE(a[2].toInt(), std::numeric_limits<std::int64_t>::max());
    QVERIFY(!a[3].isInteger()); // beyond int64: a double
    QVERIFY_THROWS_EXCEPTION(FormatError, a[3].toInt());
    QVERIFY(!a[4].isInteger());
    QVERIFY_THROWS_EXCEPTION(FormatError, a[4].toInt());
    QVERIFY(!a[5].isInteger()); // written with an exponent: a double, integral
    QCOMPARE(a[5].toInt(), std::int64_t(1000));
    QCOMPARE(a[6].toDouble(), 0.0);
    QCOMPARE(parsed.dump(),
             std::string("[9007199254740993,-9223372036854775808,9223372036854775807,"
                         "9223372036854775808,2.5,1000,0]"));
    // Written exactly, read back exactly, whichever constructor made them.
    Json j = Json::object();
    j.set("bytes", big)
        .set("seed", std::uint64_t(1) << 60)
        .set("huge", std::numeric_limits<std::uint64_t>::max());
    const Json back = Json::parse(j.dump());
    QCOMPARE(back.find("bytes")->toInt(), big);
    QCOMPARE(back.find("seed")->toInt(), std::int64_t(1) << 60);
    QVERIFY(!back.find("huge")->isInteger());
    QCOMPARE(back.find("huge")->toDouble(), 18446744073709551616.0);
    // A double that is integral but beyond 2^53 is not taken as an integer.
    QVERIFY_THROWS_EXCEPTION(FormatError, Json(1e17).toInt());
}

void TestFormats::numbersIgnoreTheLocale()
{
    // A comma-decimal locale, as Qt sets it from LANG=de_DE.UTF-8 on a German laptop.
    // scripts/install-deps.sh generates it: its absence is a broken install, not a skip.
    const std::string before = std::setlocale(LC_ALL, nullptr);
    QVERIFY2(std::setlocale(LC_ALL, "de_DE.UTF-8") != nullptr,
             "de_DE.UTF-8 is not generated (scripts/install-deps.sh does it)");
    struct Restore
    {
        std::string locale;
        ~Restore() { std::setlocale(LC_ALL, locale.c_str()); }
    } restore{before};

    const Json j = Json::parse(R"({"lr": 0.05, "box": [239.6, 211.17],
                                   "tiny": 1e-07, "third": 0.3333333333333333})");
    QCOMPARE(j.find("lr")->toDouble(), 0.05);
    QCOMPARE(j.find("box")->toArray()[1].toDouble(), 211.17);
    QCOMPARE(j.dump(), std::string(R"({"lr":0.05,"box":[239.6,211.17],)"
                                   R"("tiny":1e-07,"third":0.3333333333333333})"));
    // Shortest text that reads back exactly: every double survives a write and a read.
    for (const double d : {0.1, 1.0 / 3.0, 2.5e-300, -123456.789, 0.1f * 1.0})
        QCOMPARE(Json::parse(Json(d).dump()).toDouble(), d);
    QCOMPARE(LrSchedule::parse("step:3:0.5").toString(), std::string("step:3:0.5"));
    // A fraction in a spec is read as itself: p = 1.5 is refused as 1.5, not as 1.
    const Json spec =
        Json::parse(R"({"name": "d", "input": [4], "stages": [{"type": "dropout", "p": 1.5}]})");
    expectError<SpecError>([&] { ModelSpec::fromJson(spec, "d.json"); }, {"got 1.5"});
    // Sizes for people, the same in every locale (the CLI's and the node's one formatter).
    QCOMPARE(NumberText::bytes(512), std::string("512 B"));
    QCOMPARE(NumberText::bytes(12 * 1024 + 307), std::string("12.3 KiB"));
    QCOMPARE(NumberText::bytes(300LL << 20), std::string("300.0 MiB"));
    QCOMPARE(NumberText::bytes(3LL << 29), std::string("1.50 GiB"));
}

void TestFormats::fieldCheckWording()
{
    // The one sentence specs, sessions and jobs refuse a field with; numbers locale-free.
    QCOMPARE(FieldCheck::integerIn("plan.batch", 0, 1, 1048576),
             std::string("field \"plan.batch\" must be an integer from 1 to 1048576, got 0"));
    QVERIFY(FieldCheck::integerIn("plan.batch", 1048576, 1, 1048576).empty());
    QCOMPARE(FieldCheck::numberIn("p", 1.5, 0, 0.999),
             std::string("field \"p\" must be a number from 0 to 0.999, got 1.5"));
    QCOMPARE(FieldCheck::numberIn("lr", std::nan(""), 1e-9, 100),
             std::string("field \"lr\" must be a number from 1e-09 to 100, got NaN"));
    QCOMPARE(FieldCheck::missing("out_channels"), std::string("missing field \"out_channels\""));
    QVERIFY(FieldCheck::isIntegral(-3) && FieldCheck::isIntegral(9007199254740993.0));
    QVERIFY(!FieldCheck::isIntegral(1.5) && !FieldCheck::isIntegral(std::nan("")) &&
            !FieldCheck::isIntegral(1e300));
}

void TestFormats::modelSpecErrors_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("unknown layer")
        << R"({"name": "m", "input": [4], "stages": [{"type": "conv3d"}]})"
        << "stages[0]: unknown stage type \"conv3d\"";
    QTest::newRow("missing field")
        << R"({"name": "m", "input": [1, 8, 8], "stages": [{"type": "conv2d", "kernel": 3}]})"
        << "stages[0]: missing field \"out_channels\"";
    QTest::newRow("absurd value")
        << R"({"name": "m", "input": [1, 8, 8], "stages": [{"type": "conv2d", "out_channels": -4, "kernel": 3}]})"
        << "field \"out_channels\" must be an integer from 1 to 65536, got -4";
    QTest::newRow("typo in a field")
        << R"({"name": "m", "input": [4], "stages": [{"type": "linear", "out_feature": 3}]})"
        << "unknown field \"out_feature\"";
    QTest::newRow("kernel larger than input")
        << R"({"name": "m", "input": [1, 4, 4], "stages": [{"type": "conv2d", "out_channels": 2, "kernel": 7}, {"type": "flatten"}, {"type": "linear", "out_features": 2}]})"
        << "smaller than the kernel";
    QTest::newRow("dilation 0")
        << R"({"name": "m", "input": [1, 8, 8], "stages": [{"type": "conv2d", "out_channels": 2, "kernel": 3, "dilation": 0}]})"
        << "field \"dilation\" must be an integer from 1 to 16, got 0";
    QTest::newRow("dilated kernel larger than input")
        << R"({"name": "m", "input": [1, 6, 6], "stages": [{"type": "conv2d", "out_channels": 2, "kernel": 3, "dilation": 3}, {"type": "flatten"}, {"type": "linear", "out_features": 2}]})"
        << "smaller than the kernel";
    QTest::newRow("no classifier")
        << R"({"name": "m", "input": [1, 8, 8], "stages": [{"type": "relu"}]})"
        << "class scores";
    QTest::newRow("conv on vectors")
        << R"({"name": "m", "input": [16], "stages": [{"type": "conv2d", "out_channels": 2, "kernel": 1}]})"
        << "needs an image input";
    QTest::newRow("identity shortcut, other shape")
        << R"({"name": "m", "input": [4, 8, 8], "stages": [{"type": "basic_block", "out_channels": 8, "shortcut": "identity"}]})"
        << "identity shortcut needs equal shapes";
    QTest::newRow("nested layer error")
        << R"({"name": "m", "input": [4], "stages": [{"type": "sequential", "layers": [{"type": "linear"}]}]})"
        << "stages[0].layers[0]: missing field \"out_features\"";
    QTest::newRow("no input") << R"({"name": "m", "stages": [{"type": "relu"}]})"
                              << "field \"input\"";
}

void TestFormats::modelSpecErrors()
{
    QFETCH(QString, json);
    QFETCH(QString, fragment);
    expectError<SpecError>([&] { ModelSpec::fromJson(Json::parse(json.toStdString()), "my.json"); },
                           {"my.json", fragment.toUtf8().constData()});
    expectError<SpecError>([] { Zoo::spec("resnet21"); }, {"unknown model 'resnet21'", "resnet20"});
}

void TestFormats::safetensorsErrors()
{
    Model model(Zoo::spec("lenet5"), 1);
    const std::string good = path("good.safetensors").toStdString();
    Safetensors::saveModel(model, good);
    const float before = model.parameters()[0].parameter->value.data()[0];

    // Weights of another model: the first mismatch is named with both shapes.
    Model mlp(Zoo::spec("mlp"), 1);
    const std::string other = path("mlp.safetensors").toStdString();
    Safetensors::saveModel(mlp, other);
    expectError<FormatError>([&] { Safetensors::loadModel(model, other); },
                             {"mlp.safetensors", "0.weight"});

    // Same names, one wrong shape.
    Safetensors st = Safetensors::read(good);
    std::vector<float> wrong(6 * 1 * 3 * 3, 0.5f);
    st.addFloat("0.weight", Shape{6, 1, 3, 3}, wrong.data());
    const std::string shaped = path("shape.safetensors").toStdString();
    st.write(shaped);
    expectError<FormatError>([&] { Safetensors::loadModel(model, shaped); },
                             {"'0.weight' has shape [6, 1, 3, 3]", "expects [6, 1, 5, 5]"});
    QCOMPARE(model.parameters()[0].parameter->value.data()[0], before); // untouched

    // An extra tensor the model does not have.
    Safetensors extra = Safetensors::read(good);
    extra.addInt64("head.steps", 3);
    extra.write(path("extra.safetensors").toStdString());
    expectError<FormatError>(
        [&] { Safetensors::loadModel(model, path("extra.safetensors").toStdString()); },
        {"'head.steps'", "does not have"});

    // Damaged files: truncated data, absurd header length, garbage.
    QFile f(QString::fromStdString(good));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    writeRaw(path("cut.safetensors"), bytes.left(bytes.size() - 100));
    expectError<FormatError>([&] { Safetensors::read(path("cut.safetensors").toStdString()); },
                             {"data_offsets"});
    QByteArray huge = bytes;
    huge[6] = char(0x7f);
    writeRaw(path("huge.safetensors"), huge);
    expectError<FormatError>([&] { Safetensors::read(path("huge.safetensors").toStdString()); },
                             {"header length"});
    writeRaw(path("garbage.safetensors"), QByteArray(8, '\x20') + QByteArray(300, 'x'));
    expectError<FormatError>([&] { Safetensors::read(path("garbage.safetensors").toStdString()); },
                             {"garbage.safetensors"});
    expectError<IoError>([&] { Safetensors::read(path("none.safetensors").toStdString()); },
                         {"none.safetensors"});
    Safetensors::loadModel(model, good); // the good file still loads

    // A shape whose element count overflows 64 bits must not pass as an empty tensor.
    const QByteArray header =
        R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})";
    QByteArray file(8, '\0');
    for (int b = 0; b < 8; ++b)
        file[b] = char((std::uint64_t(header.size()) >> (8 * b)) & 0xff);
    writeRaw(path("overflow.safetensors"), file + header);
    expectError<FormatError>([&] { Safetensors::read(path("overflow.safetensors").toStdString()); },
                             {"overflow.safetensors", "tensor 't'", "overflows"});
}

QTEST_APPLESS_MAIN(TestFormats)
#include "tst_formats.moc"
