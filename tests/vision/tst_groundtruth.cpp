// Verified frames: truth.json, and the four annotation formats people exchange boxes in. Round
// trips per format, and one bad file per format per kind of mistake, each refused with a message
// that names the file, the line or element, and the field.

#include "core/error.h"
#include "vision/groundtruth.h"

#include <QDir>
#include <QFile>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <clocale>
#include <filesystem>

using namespace edgetrain;
using namespace edgetrain::vision;

namespace {

const cv::Size kFrame{320, 240};
constexpr int kFrameCount = 20;

/** Three frames: two with boxes (fractional coordinates, ids, an ignore box), one empty. */
GroundTruth sample()
{
    GroundTruth gt;
    gt.source = "/videos/street.avi";
    gt.frame_size = kFrame;
    gt.note = "drawn by hand, head to feet";
    TruthFrame &a = gt.ensureFrame(12);
    a.done = true;
    a.boxes.push_back({cv::Rect2d(10.25, 20.5, 30.125, 80.75), false, 4});
    a.boxes.push_back({cv::Rect2d(200.0, 100.0, 40.5, 90.0), false, 7});
    a.boxes.push_back({cv::Rect2d(290.0, 5.0, 12.0, 14.0), true, -1}); // too small: ignore
    a.pick = "disagreement";
    TruthFrame &b = gt.ensureFrame(3);
    b.done = true;
    b.boxes.push_back({cv::Rect2d(0.0, 0.0, 319.5, 239.25), false, 2});
    gt.ensureFrame(7).done = true; // verified: nobody there
    gt.ensureFrame(7).pick = "spread";
    return gt;
}

std::vector<TruthBox> sortedBoxes(const TruthFrame &f)
{
    auto boxes = f.boxes;
    std::sort(boxes.begin(), boxes.end(),
              [](const TruthBox &a, const TruthBox &b) { return a.box.x < b.box.x; });
    return boxes;
}

void writeFile(const QString &path, const QByteArray &content)
{
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
    f.write(content);
}

} // namespace

class TestGroundTruth : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void framesStaySortedAndUnique()
    {
        GroundTruth gt;
        gt.ensureFrame(9);
        gt.ensureFrame(2).done = true;
        gt.ensureFrame(5);
        gt.ensureFrame(2).boxes.push_back({cv::Rect2d(1, 1, 5, 5)});
        QCOMPARE(int(gt.frames.size()), 3);
        QCOMPARE(gt.frames[0].index, 2);
        QCOMPARE(gt.frames[1].index, 5);
        QCOMPARE(gt.frames[2].index, 9);
        QCOMPARE(int(gt.frames[0].boxes.size()), 1);
        QCOMPARE(gt.doneFrames(), 1);
        QVERIFY(gt.frame(5));
        QVERIFY(!gt.frame(6));
    }

    void formatNames()
    {
        QVERIFY(annotationFormat("cvat") == AnnotationFormat::Cvat);
        try {
            annotationFormat("voc");
            QFAIL("an unknown format was accepted");
        } catch (const core::Error &e) {
            QVERIFY(QString(e.what()).contains("mot, coco, cvat, yolo"));
        }
    }

    void everyFormatHasItsCodec()
    {
        for (AnnotationFormat f : {AnnotationFormat::Mot, AnnotationFormat::Coco,
                                   AnnotationFormat::Cvat, AnnotationFormat::Yolo}) {
            const std::string name = annotationFormatName(f);
            QCOMPARE(std::string(annotationCodec(f).name()), name);
            QVERIFY(annotationFormat(name) == f);
        }
    }

    void missingFileIsAnIoError_data()
    {
        QTest::addColumn<QString>("format");
        for (const char *format : {"mot", "coco", "cvat", "yolo"})
            QTest::newRow(format) << QString(format);
    }

    void missingFileIsAnIoError()
    {
        QFETCH(QString, format);
        QTemporaryDir dir;
        const std::string path = dir.filePath("absent").toStdString();
        try {
            GroundTruth::importFile(path, annotationFormat(format.toStdString()), kFrame,
                                    kFrameCount);
            QFAIL("a missing file was imported");
        } catch (const core::IoError &e) {
            QVERIFY2(QString(e.what()).contains(QString::fromStdString(path)), e.what());
        }
    }

    void truthJsonRoundTrip()
    {
        QTemporaryDir dir;
        const GroundTruth gt = sample();
        gt.save(dir.path().toStdString());
        QVERIFY(GroundTruth::exists(dir.path().toStdString()));
        // Saved through a temporary file of its own, renamed over: nothing else is left.
        QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
                 QStringList{"truth.json"});
        const GroundTruth back = GroundTruth::load(dir.path().toStdString());
        QCOMPARE(back.source, gt.source);
        QCOMPARE(back.note, gt.note);
        QCOMPARE(back.category, gt.category);
        QCOMPARE(back.frame_size, gt.frame_size);
        QCOMPARE(back.frames.size(), gt.frames.size());
        for (std::size_t i = 0; i < gt.frames.size(); ++i) {
            QCOMPARE(back.frames[i].index, gt.frames[i].index);
            QCOMPARE(back.frames[i].done, gt.frames[i].done);
            QCOMPARE(back.frames[i].pick, gt.frames[i].pick);
            QCOMPARE(back.frames[i].boxes.size(), gt.frames[i].boxes.size());
            for (std::size_t k = 0; k < gt.frames[i].boxes.size(); ++k) {
                QCOMPARE(back.frames[i].boxes[k].box, gt.frames[i].boxes[k].box);
                QCOMPARE(back.frames[i].boxes[k].ignore, gt.frames[i].boxes[k].ignore);
                QCOMPARE(back.frames[i].boxes[k].id, gt.frames[i].boxes[k].id);
            }
        }
    }

    void truthJsonRefusesBadFields()
    {
        core::Json j = sample().toJson();
        j.toObject()[6].second.toArray()[0].toObject()[2].second.toArray()[0].set("w", -3.0);
        try {
            GroundTruth::fromJson(j, "session/truth.json");
            QFAIL("a box without area was accepted");
        } catch (const core::FormatError &e) {
            QVERIFY2(QString(e.what()).contains("session/truth.json: frames[0].boxes[0]"),
                     e.what());
        }
    }

    void roundTrip_data()
    {
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("locale");
        QTest::newRow("mot") << "mot"
                             << "gt.txt"
                             << "C";
        QTest::newRow("coco") << "coco"
                              << "instances.json"
                              << "C";
        QTest::newRow("cvat") << "cvat"
                              << "annotations.xml"
                              << "C";
        QTest::newRow("yolo") << "yolo"
                              << "labels"
                              << "C";
        // The text formats read and write numbers without the locale (decimal commas in German).
        // COCO goes through core/json.h, whose own locale fix is another change.
        QTest::newRow("mot de_DE") << "mot"
                                   << "gt.txt"
                                   << "de_DE.utf8";
        QTest::newRow("cvat de_DE") << "cvat"
                                    << "annotations.xml"
                                    << "de_DE.utf8";
        QTest::newRow("yolo de_DE") << "yolo"
                                    << "labels"
                                    << "de_DE.utf8";
    }

    void roundTrip()
    {
        QFETCH(QString, format);
        QFETCH(QString, file);
        QFETCH(QString, locale);
        if (!std::setlocale(LC_ALL, locale.toUtf8().constData()))
            QFAIL(qPrintable(locale +
                             QStringLiteral(" is missing: scripts/install-deps.sh generates it")));
        const auto restore = qScopeGuard([] { std::setlocale(LC_ALL, "C"); });
        QTemporaryDir dir;
        const std::string path = dir.filePath(file).toStdString();
        const AnnotationFormat f = annotationFormat(format.toStdString());
        const GroundTruth gt = sample();
        gt.exportFile(path, f);
        const GroundTruth back = GroundTruth::importFile(path, f, kFrame, kFrameCount);
        QCOMPARE(back.frame_size, kFrame);
        QCOMPARE(back.category, std::string("person"));
        const bool yolo = f == AnnotationFormat::Yolo;
        // MOT has no row for an empty frame: frame 7 cannot come back, and the export says so.
        if (f == AnnotationFormat::Mot) {
            QVERIFY(!back.frame(7));
            QVERIFY(QString::fromStdString(gt.exportLosses(f)).contains("1 empty frames"));
        } else {
            QVERIFY(back.frame(7));
            QVERIFY(back.frame(7)->boxes.empty());
            QVERIFY(back.frame(7)->done);
        }
        QCOMPARE(QString::fromStdString(gt.exportLosses(f)).contains("1 left out"), yolo);
        for (const TruthFrame &original : gt.frames) {
            if (original.boxes.empty())
                continue;
            const TruthFrame *imported = back.frame(original.index);
            QVERIFY2(imported, qPrintable(QString("frame %1 is missing").arg(original.index)));
            QVERIFY(imported->done);
            std::vector<TruthBox> expected;
            for (const TruthBox &b : sortedBoxes(original))
                if (!(yolo && b.ignore)) // YOLO cannot carry ignore boxes
                    expected.push_back(b);
            const auto got = sortedBoxes(*imported);
            QCOMPARE(got.size(), expected.size());
            for (std::size_t k = 0; k < got.size(); ++k) {
                QVERIFY(std::abs(got[k].box.x - expected[k].box.x) < 0.01);
                QVERIFY(std::abs(got[k].box.y - expected[k].box.y) < 0.01);
                QVERIFY(std::abs(got[k].box.width - expected[k].box.width) < 0.01);
                QVERIFY(std::abs(got[k].box.height - expected[k].box.height) < 0.01);
                QCOMPARE(got[k].ignore, expected[k].ignore);
                QCOMPARE(got[k].id, yolo ? -1 : expected[k].id); // YOLO has no ids
            }
        }
    }

    void slightlyOutsideIsClipped()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("gt.txt"), "1,3,0.5,1,20,40,1,1,1\n1,4,301,201,20.8,40.6,1,1,1\n");
        const GroundTruth gt = GroundTruth::importFile(dir.filePath("gt.txt").toStdString(),
                                                       AnnotationFormat::Mot, kFrame, kFrameCount);
        const auto boxes = sortedBoxes(*gt.frame(0));
        QCOMPARE(boxes[0].box, cv::Rect2d(0, 0, 19.5, 40)); // MOT is 1-based: 0.5 -> -0.5
        QCOMPARE(boxes[1].box.br(), cv::Point2d(320, 240));
    }

    void motClassesAndIgnoreFlag()
    {
        // conf 0: not considered; class 7 (static person): a distractor; class 3 (car): left out.
        QTemporaryDir dir;
        writeFile(dir.filePath("gt.txt"), "2,1,11,11,20,40,1,1,0.9\n"
                                          "2,2,51,11,20,40,0,1,0.2\n"
                                          "2,3,101,11,20,40,1,7,1\n"
                                          "5,4,151,11,60,30,1,3,1\n"
                                          "6,5,11,11,20,40\n");
        const GroundTruth gt = GroundTruth::importFile(dir.filePath("gt.txt").toStdString(),
                                                       AnnotationFormat::Mot, kFrame, kFrameCount);
        const auto boxes = sortedBoxes(*gt.frame(1));
        QCOMPARE(int(boxes.size()), 3);
        QCOMPARE(boxes[0].box, cv::Rect2d(10, 10, 20, 40));
        QVERIFY(!boxes[0].ignore);
        QVERIFY(boxes[1].ignore);
        QVERIFY(boxes[2].ignore);
        QVERIFY(gt.frame(4) && gt.frame(4)->boxes.empty()); // annotated frame, no person on it
        QCOMPARE(int(gt.frame(5)->boxes.size()), 1);        // 6 columns: a MOT15-style line
        QVERIFY(QString::fromStdString(gt.note).contains("1 rows of other classes left out"));
    }

    void labelsAsAnnotations()
    {
        LabelResult labels;
        labels.source = "v.avi";
        labels.frame_size = kFrame;
        labels.stats.frames = 4;
        Track kept;
        kept.id = 5;
        kept.boxes = {{1, cv::Rect2d(1, 2, 3, 4), BoxSource::Teacher, 0.9f},
                      {2, cv::Rect2d(2, 2, 3, 4), BoxSource::Tracker, 0.5f}};
        Track rejected = kept;
        rejected.id = 6;
        rejected.state = Track::State::Rejected;
        labels.tracks = {kept, rejected};
        const GroundTruth gt = GroundTruth::fromLabels(labels);
        QCOMPARE(int(gt.frames.size()), 4);
        QCOMPARE(gt.doneFrames(), 0);
        QCOMPARE(gt.boxCount(), 2);
        QCOMPARE(gt.frame(2)->boxes[0].id, 5);
    }

    void badFiles_data()
    {
        // files: alternating name, content (a YOLO import reads the folder "labels")
        QTest::addColumn<QString>("format");
        QTest::addColumn<QStringList>("files");
        QTest::addColumn<QString>("import");
        QTest::addColumn<QStringList>("expected");

        const QString ok = "1,1,10,10,20,40,1,1,1\n";
        QTest::newRow("mot: wrong columns")
            << "mot" << QStringList{"gt.txt", ok + "2,1,10,10,20\n"} << "gt.txt"
            << QStringList{"gt.txt:2:", "5 columns, expected at least 6"};
        QTest::newRow("mot: not a number")
            << "mot" << QStringList{"gt.txt", ok + "2,1,1O,10,20,40,1,1,1\n"} << "gt.txt"
            << QStringList{"gt.txt:2:", "column 3 (bb_left)", "'1O' is not a number"};
        QTest::newRow("mot: box outside the frame")
            << "mot" << QStringList{"gt.txt", ok + "\n2,1,301,10,30,40,1,1,1\n"} << "gt.txt"
            << QStringList{"gt.txt:3:", "'bb_width'", "ends right", "320x240"};
        QTest::newRow("mot: unknown frame")
            << "mot" << QStringList{"gt.txt", ok + "21,1,10,10,20,40,1,1,1\n"} << "gt.txt"
            << QStringList{"gt.txt:2:", "column 1 (frame)", "frame 21 is not in the video (1..20)"};

        const QString cats =
            R"("categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "car"}])";
        const QString img =
            R"({"id": 1, "file_name": "frame_000003.png", "width": 320, "height": 240})";
        auto coco = [&](const QString &images, const QString &annotations) {
            return "{\"images\": [" + images + "],\n \"annotations\": [" + annotations + "],\n " +
                   cats + "}\n";
        };
        QTest::newRow("coco: malformed JSON")
            << "coco" << QStringList{"coco.json", "{\"images\": [\n  {\"id\": 1,,}\n"}
            << "coco.json" << QStringList{"coco.json:2:", "expected a quoted key"};
        QTest::newRow("coco: wrong bbox")
            << "coco"
            << QStringList{"coco.json",
                           coco(img, R"({"image_id": 1, "category_id": 1, "bbox": [1, 2, 3]})")}
            << "coco.json"
            << QStringList{"coco.json: annotations[0].bbox", "[x, y, width, height]"};
        QTest::newRow("coco: box outside the frame")
            << "coco"
            << QStringList{"coco.json",
                           coco(img, R"({"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4]},
                                        {"image_id": 1, "category_id": 1, "bbox": [10, 230, 20, 40]})")}
            << "coco.json" << QStringList{"coco.json: annotations[1]", "'bbox[3]'", "ends below"};
        QTest::newRow("coco: unknown frame")
            << "coco"
            << QStringList{"coco.json", coco(R"({"id": 4, "file_name": "frame_000050.png"})", "")}
            << "coco.json"
            << QStringList{"coco.json: images[0]", "frame 50 is not in the video (0..19)"};
        QTest::newRow("coco: image without a frame")
            << "coco"
            << QStringList{"coco.json", coco(R"({"id": 4, "file_name": "street.png"})", "")}
            << "coco.json"
            << QStringList{"coco.json: images[0].file_name", "'street.png' has no frame number"};
        QTest::newRow("coco: wrong category")
            << "coco"
            << QStringList{"coco.json",
                           coco(img, R"({"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4]})")}
            << "coco.json"
            << QStringList{"coco.json: annotations[0].category_id", "'car' is not 'person'"};

        auto cvat = [](const QString &boxes, const QString &name = "frame_000003.png") {
            return "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<annotations>\n"
                   "  <version>1.1</version>\n  <image id=\"0\" name=\"" +
                   name + "\" width=\"320\" height=\"240\">\n" + boxes +
                   "  </image>\n</annotations>\n";
        };
        const QString box =
            "    <box label=\"person\" xtl=\"1\" ytl=\"2\" xbr=\"30\" ybr=\"60\"/>\n";
        QTest::newRow("cvat: malformed XML")
            << "cvat" << QStringList{"a.xml", cvat(box + "    <box label=\"person\" xtl=\"1\">\n")}
            << "a.xml" << QStringList{"a.xml:7:", "malformed XML"};
        QTest::newRow("cvat: not a number")
            << "cvat"
            << QStringList{"a.xml", cvat(box + QString(box).replace("xtl=\"1\"", "xtl=\"1,5\""))}
            << "a.xml" << QStringList{"a.xml:6:", "<box>", "'xtl'", "'1,5' is not a number"};
        QTest::newRow("cvat: box outside the frame")
            << "cvat"
            << QStringList{"a.xml", cvat(box + QString(box).replace("xbr=\"30\"", "xbr=\"400\""))}
            << "a.xml" << QStringList{"a.xml:6:", "<box>", "'xbr'", "ends right"};
        QTest::newRow("cvat: unknown frame")
            << "cvat" << QStringList{"a.xml", cvat(box, "frame_000030.png")} << "a.xml"
            << QStringList{"a.xml:4:", "<image> attribute 'name'", "frame 30 is not in the video"};
        QTest::newRow("cvat: absurd image id") // fuzz_annotations: int(1e129) was UB
            << "cvat"
            << QStringList{"a.xml", cvat(box, "still.png").replace("id=\"0\"", "id=\"1e129\"")}
            << "a.xml" << QStringList{"a.xml:4:", "attribute 'id'", "is not a frame number"};
        QTest::newRow("cvat: wrong category")
            << "cvat" << QStringList{"a.xml", cvat(QString(box).replace("person", "car"))}
            << "a.xml" << QStringList{"a.xml:5:", "<box>", "'label'", "'car' is not 'person'"};

        const QString line = "0 0.5 0.5 0.1 0.2\n";
        QTest::newRow("yolo: wrong columns")
            << "yolo" << QStringList{"labels/frame_000003.txt", line + "0 0.5 0.5 0.1\n"}
            << "labels" << QStringList{"frame_000003.txt:2:", "4 columns, expected 5"};
        QTest::newRow("yolo: unknown class")
            << "yolo"
            << QStringList{"labels/classes.txt", "person\n", "labels/frame_000003.txt",
                           line + "1 0.5 0.5 0.1 0.2\n"}
            << "labels"
            << QStringList{"frame_000003.txt:2:", "column 1 (class)", "unknown class index '1'"};
        QTest::newRow("yolo: wrong category")
            << "yolo" << QStringList{"labels/classes.txt", "car\n", "labels/frame_000003.txt", line}
            << "labels"
            << QStringList{"frame_000003.txt:1:", "column 1 (class)", "'car' is not 'person'"};
        QTest::newRow("yolo: box outside the frame")
            << "yolo" << QStringList{"labels/frame_000003.txt", line + "0 0.99 0.5 0.1 0.2\n"}
            << "labels" << QStringList{"frame_000003.txt:2:", "field 'w'", "ends right"};
        QTest::newRow("yolo: unknown frame")
            << "yolo"
            << QStringList{"labels/frame_000003.txt", line, "labels/frame_000025.txt", line}
            << "labels"
            << QStringList{"frame_000025.txt: file name", "frame 25 is not in the video (0..19)"};
    }

    void badFiles()
    {
        QFETCH(QString, format);
        QFETCH(QStringList, files);
        QFETCH(QString, import);
        QFETCH(QStringList, expected);
        QTemporaryDir dir;
        for (int i = 0; i + 1 < files.size(); i += 2) {
            QDir(dir.path()).mkpath(QFileInfo(dir.filePath(files[i])).path());
            writeFile(dir.filePath(files[i]), files[i + 1].toUtf8());
        }
        const std::string path = dir.filePath(import).toStdString();
        try {
            const GroundTruth gt = GroundTruth::importFile(
                path, annotationFormat(format.toStdString()), kFrame, kFrameCount);
            QFAIL(qPrintable("accepted, " + QString::number(gt.boxCount()) + " boxes"));
        } catch (const core::FormatError &e) {
            const QString message = e.what();
            QVERIFY2(message.contains(QString::fromStdString(path)), qPrintable(message));
            for (const QString &part : expected)
                QVERIFY2(message.contains(part), qPrintable(message + "\n  lacks: " + part));
        }
    }
};

QTEST_GUILESS_MAIN(TestGroundTruth)
#include "tst_groundtruth.moc"
