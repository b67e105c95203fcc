// The student's export (issue #42): a student trained briefly on vtest.avi's verified frames,
// exported to ONNX, is accepted by onnx.checker, runs in OpenCV's cv::dnn with the engine's
// outputs, and as the `onnx:` teacher finds the boxes the session's student finds; the
// safetensors export carries the same metadata. With EDGETRAIN_EXPORT_DIR set, the session and
// its export are left there for tests/vision/run_student_check.py (ctest fixture). With
// EDGETRAIN_STUDENT=detector.safetensors the checks run on that student instead (e.g. a demo
// session's, at its own input size, threshold and views).
#include "core/detectionloss.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "vision/export/onnxexport.h"
#include "vision/export/studentexport.h"
#include "vision/framestudent.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/dnn.hpp>
#include <opencv2/videoio.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace edgetrain;
using namespace edgetrain::vision;

namespace {

const char *const kVideo = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
const cv::Size kInput(128, 96); // the briefly trained student's

/** tests/data/vtest's verified frames: frame index -> its boxes (conf 0: ignore regions). */
std::map<int, std::vector<core::LabelBox>> verifiedBoxes()
{
    std::ifstream in(std::string(EDGETRAIN_SOURCE_DIR) + "/tests/data/vtest/gt.txt");
    std::map<int, std::vector<core::LabelBox>> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream row(line);
        std::string f[9];
        for (std::string &field : f)
            std::getline(row, field, ',');
        const float x = std::stof(f[2]), y = std::stof(f[3]);
        out[std::stoi(f[0]) - 1].push_back(
            {x, y, x + std::stof(f[4]), y + std::stof(f[5]), f[6] == "0"});
    }
    return out;
}

/** The frames of vtest.avi with these indices, in order. */
std::map<int, cv::Mat> readFrames(const std::set<int> &wanted)
{
    cv::VideoCapture video(kVideo);
    std::map<int, cv::Mat> frames;
    cv::Mat frame;
    for (int f = 0; !wanted.empty() && f <= *wanted.rbegin() && video.read(frame); ++f)
        if (wanted.count(f))
            frames[f] = frame.clone();
    return frames;
}

/** Twenty frames spread over the video, none of them trained on by name. */
std::set<int> testFrames()
{
    std::set<int> frames;
    for (int f = 15; f < 795; f += 40)
        frames.insert(f);
    return frames;
}

/** A student trained briefly (plain SGD, every verified frame in one batch): enough that its
 *  heatmap has peaks on people and its batch-norm statistics are its own, not the initial ones.
 *  Saved with threshold 0.2 and the mirror view. */
void trainBriefly(const std::string &weights)
{
    const auto truth = verifiedBoxes();
    std::set<int> trainFrames;
    for (const auto &[f, boxes] : truth)
        trainFrames.insert(f);
    const auto images = readFrames(trainFrames);
    QCOMPARE(images.size(), truth.size());
    core::Model model(FrameStudentTrainer::spec(kInput), 3);
    const std::int64_t n = std::int64_t(images.size());
    const int width = model.spec().labelWidth();
    core::Tensor x(model.batchShape(n), core::MemoryCategory::Activations);
    std::vector<std::int32_t> labels(std::size_t(n * width));
    std::int64_t i = 0;
    for (const auto &[f, image] : images) {
        FrameStudent::inputBatch(image, kInput, false, x.data() + i * 3 * kInput.area());
        const float kx = float(kInput.width) / image.cols, ky = float(kInput.height) / image.rows;
        std::vector<core::LabelBox> boxes;
        for (core::LabelBox b : truth.at(f))
            boxes.push_back({b.x0 * kx, b.y0 * ky, b.x1 * kx, b.y1 * ky, b.ignore});
        core::DetectionLoss::encode(boxes, (width - 1) / 5, labels.data() + i * width);
        ++i;
    }
    core::PassContext ctx;
    ctx.training = true;
    double first = 0, last = 0;
    for (int step = 0; step < 40; ++step) {
        const core::StepResult r = model.forwardBackward(x, labels.data(), ctx);
        (step == 0 ? first : last) = r.loss;
        for (const core::NamedParameter &p : model.parameters()) {
            float *v = p.parameter->value.data();
            const float *g = p.parameter->grad.data();
            for (std::int64_t k = 0; k < p.parameter->value.numel(); ++k)
                v[k] -= 0.05f * g[k];
        }
    }
    qInfo("student trained 40 steps on %lld verified frames: loss %.3f -> %.3f", (long long)n,
          first, last);
    QVERIFY(last < first);
    FrameStudent::saveModel(model, weights, 0.2f, true);
}

} // namespace

class TestOnnxExport : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void checkerAcceptsTheExport();
    void metadataSaysHowToDecode();
    void dnnOutputsEqualTheEngine();
    void onnxTeacherFindsTheStudentsBoxes();
    void safetensorsExportCarriesTheMetadata();
    void unsupportedLayersAreNamed();
    void foreignFormatVersionIsRefused();

private:
    QTemporaryDir m_temp;
    std::string m_session, m_onnx;
    std::unique_ptr<core::Model> m_model;
    cv::Size m_input;
    float m_threshold = 0;
    bool m_mirror = true;
    std::map<int, cv::Mat> m_frames;
};

void TestOnnxExport::initTestCase()
{
    QVERIFY(m_temp.isValid());
    const QByteArray fixture = qgetenv("EDGETRAIN_EXPORT_DIR");
    const std::string root =
        fixture.isEmpty() ? m_temp.path().toStdString() : fixture.toStdString();
    m_session = root + "/session";
    m_onnx = root + "/student.onnx";
    std::filesystem::remove_all(m_session);
    std::filesystem::create_directories(m_session);

    const std::string weights = StudentTeacher::weightsPath(m_session);
    if (const QByteArray given = qgetenv("EDGETRAIN_STUDENT"); !given.isEmpty())
        std::filesystem::copy_file(given.toStdString(), weights);
    else
        trainBriefly(weights);
    if (QTest::currentTestFailed())
        return;
    m_model = FrameStudent::loadModel(weights);
    m_input = FrameStudent(*m_model).inputSize();
    m_threshold = FrameStudent::savedThreshold(weights);
    m_mirror = FrameStudent::savedMirror(weights);
    QVERIFY(m_threshold > 0);
    QVERIFY_THROWS_NO_EXCEPTION(
        StudentExport::exportSession(m_session, StudentExport::Format::Onnx, m_onnx));
    m_frames = readFrames(testFrames());
    QCOMPARE(int(m_frames.size()), 20);
}

void TestOnnxExport::checkerAcceptsTheExport()
{
    QProcess python;
    python.start(QStringLiteral("/usr/bin/python3"),
                 {QStringLiteral("-c"),
                  QStringLiteral("import sys, onnx\n"
                                 "m = onnx.load(sys.argv[1])\n"
                                 "onnx.checker.check_model(m, full_check=True)\n"
                                 "print(m.opset_import[0].version, m.graph.input[0].name, "
                                 "m.graph.output[0].name)"),
                  QString::fromStdString(m_onnx)});
    QVERIFY(python.waitForFinished(60000));
    const QByteArray out = python.readAllStandardOutput().trimmed();
    QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
    QCOMPARE(out, QByteArray("13 image heads"));
}

void TestOnnxExport::metadataSaysHowToDecode()
{
    const auto meta = OnnxExport::readMetadata(m_onnx);
    QCOMPARE(meta.at(StudentExport::kFormatKey), std::string(StudentExport::kFormat));
    QCOMPARE(meta.at("edgetrain.input.width"), std::to_string(m_input.width));
    QCOMPARE(meta.at("edgetrain.input.height"), std::to_string(m_input.height));
    QCOMPARE(meta.at("edgetrain.input.channel_order"), std::string("BGR"));
    QCOMPARE(meta.at("edgetrain.output.stride"), std::string("4"));
    QCOMPARE(meta.at("edgetrain.threshold_source"), std::string("calibrated"));
    QCOMPARE(meta.at(FrameStudent::kViewsKey), std::string(m_mirror ? "mirror" : "frame"));
    const auto point = StudentExport::operatingPoint(meta, m_onnx);
    QCOMPARE(point.threshold, m_threshold);
    QCOMPARE(point.decoding.mirror, m_mirror);
    QCOMPARE(point.decoding.input, m_input);
    QCOMPARE(point.decoding.nms_iou, FrameStudent(*m_model).nms_iou);
    QCOMPARE(point.decoding.mirror_iou, FrameStudent(*m_model).mirror_iou);
}

void TestOnnxExport::dnnOutputsEqualTheEngine()
{
    cv::dnn::Net net = cv::dnn::readNetFromONNX(m_onnx);
    double worst = 0, largest = 0;
    for (const auto &[f, frame] : m_frames) {
        core::Tensor x(m_model->batchShape(2), core::MemoryCategory::Activations);
        FrameStudent::inputBatch(frame, m_input, true, x.data());
        core::PassContext ctx;
        ctx.training = false;
        const core::Tensor engine = m_model->forward(x, ctx);
        const int dims[] = {2, 3, m_input.height, m_input.width};
        net.setInput(cv::Mat(4, dims, CV_32F, x.data()));
        const cv::Mat dnn = net.forward();
        QCOMPARE(dnn.total(), std::size_t(engine.numel()));
        QCOMPARE(dnn.size[2], m_input.height / 4);
        for (std::int64_t k = 0; k < engine.numel(); ++k) {
            worst = std::max(worst, double(std::abs(dnn.ptr<float>()[k] - engine.data()[k])));
            largest = std::max(largest, double(std::abs(engine.data()[k])));
        }
    }
    qInfo("cv::dnn against the engine on %d frames (and their mirror images): max |diff| %.3g "
          "(outputs up to %.3g)",
          int(m_frames.size()), worst, largest);
    QVERIFY(largest > 0.1); // the comparison is not one of zeros
    QVERIFY(worst <= 1e-4);
}

void TestOnnxExport::onnxTeacherFindsTheStudentsBoxes()
{
    const std::unique_ptr<Teacher> onnx = Teacher::create("onnx:" + m_onnx);
    const auto *head = dynamic_cast<OnnxTeacher *>(onnx.get());
    QVERIFY(head);
    QCOMPARE(int(head->head()), int(OnnxTeacher::Head::Student));
    QCOMPARE(onnx->threshold, m_threshold);
    const std::unique_ptr<Teacher> session = Teacher::create("session:" + m_session);
    int boxes = 0;
    for (const auto &[f, frame] : m_frames) {
        const auto a = session->detect(frame), b = onnx->detect(frame);
        QCOMPARE(b.size(), a.size());
        for (std::size_t k = 0; k < a.size(); ++k) {
            const cv::Rect2d &p = a[k].box, &q = b[k].box;
            const double off =
                std::max({std::abs(p.x - q.x), std::abs(p.y - q.y), std::abs(p.width - q.width),
                          std::abs(p.height - q.height)});
            QVERIFY2(
                off < 0.01 && std::abs(a[k].score - b[k].score) < 1e-5,
                qPrintable(
                    QStringLiteral("frame %1 box %2 differs by %3 px").arg(f).arg(k).arg(off)));
        }
        boxes += int(a.size());
    }
    qInfo("onnx: teacher and session: student: the same %d boxes on %d frames", boxes,
          int(m_frames.size()));
    QVERIFY(boxes >= 20); // the student finds people: the comparison is not of empty lists
}

void TestOnnxExport::safetensorsExportCarriesTheMetadata()
{
    const std::string out = m_temp.path().toStdString() + "/student.safetensors";
    StudentExport::exportSession(m_session, StudentExport::Format::Safetensors, out);
    const core::Safetensors file = core::Safetensors::read(out);
    const auto onnxMeta = OnnxExport::readMetadata(m_onnx);
    for (const auto &[key, value] : onnxMeta)
        QCOMPARE(file.metadata().at(key), value);
    // The same weights: the file loads as the session's student and gives its outputs.
    const auto model = FrameStudent::loadModel(out);
    QCOMPARE(FrameStudent(*model).detect(m_frames.begin()->second, m_threshold).size(),
             FrameStudent(*m_model).detect(m_frames.begin()->second, m_threshold).size());
}

void TestOnnxExport::unsupportedLayersAreNamed()
{
    core::Model resnet(core::Zoo::spec("resnet20"), 1);
    try {
        OnnxExport::serialise(resnet, {});
        QFAIL("a residual block was exported");
    } catch (const core::SpecError &e) {
        QVERIFY2(std::string(e.what()).find("basic_block") != std::string::npos, e.what());
    }
    QCOMPARE(StudentExport::formatOf("a/b.onnx"), StudentExport::Format::Onnx);
    QVERIFY_THROWS_EXCEPTION(core::SpecError, StudentExport::formatOf("b.pt"));
    QVERIFY_THROWS_EXCEPTION(core::SpecError, StudentExport::parseFormat("tflite"));
}

void TestOnnxExport::foreignFormatVersionIsRefused()
{
    auto meta = OnnxExport::readMetadata(m_onnx);
    meta[StudentExport::kFormatKey] = "centernet-student/9";
    const std::string path = m_temp.path().toStdString() + "/future.onnx";
    OnnxExport::write(*m_model, meta, path);
    try {
        Teacher::create("onnx:" + path);
        QFAIL("a student export of an unknown version was read");
    } catch (const core::FormatError &e) {
        QVERIFY2(std::string(e.what()).find("centernet-student/9") != std::string::npos, e.what());
    }
}

QTEST_GUILESS_MAIN(TestOnnxExport)
#include "tst_onnxexport.moc"
