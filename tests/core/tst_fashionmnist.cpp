// Real data: LeNet-5 on the full Fashion-MNIST (Debian's dataset-fashion-mnist) does at least as
// well as PyTorch. After one epoch (constant lr) it must reach 84.5 % test accuracy: the PyTorch
// reference with the same model, normalisation and settings reaches 84.6 % on 1 thread and
// 84.5 % on 2 (../shared/bench/torch_fmnist_lenet.py, figures in ../shared/bench/README.md).
// The engine reaches 85.9 % with oneDNN's GEMM and 84.9 % with Eigen's (the arm64 build).
// After five epochs (cosine lr) it must reach 89 %: there is no PyTorch figure for that run, so
// this bound is the engine's own result (89.7 %) less a margin.

#include "core/fashionmnist.h"
#include "core/parallel.h"
#include "core/trainer.h"
#include "core/zoo.h"

#include <QTest>

using namespace edgetrain::core;

class TestFashionMnist : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void lenet5Accuracy_data();
    void lenet5Accuracy();
    void cancelStopsAfterTheCurrentBatch();

private:
    std::unique_ptr<TensorDataset> m_train;
    std::unique_ptr<TensorDataset> m_test;
};

void TestFashionMnist::initTestCase()
{
    setThreadCount(2);
    m_train = std::make_unique<TensorDataset>(
        FashionMnist::load(FashionMnist::kDefaultDirectory, FashionMnist::Split::Train));
    m_test = std::make_unique<TensorDataset>(
        FashionMnist::load(FashionMnist::kDefaultDirectory, FashionMnist::Split::Test));
    QCOMPARE(m_train->size(), std::int64_t(60000));
    QCOMPARE(m_test->size(), std::int64_t(10000));
    QCOMPARE(m_train->sampleShape(), (Shape{1, 28, 28}));
}

void TestFashionMnist::lenet5Accuracy_data()
{
    QTest::addColumn<int>("epochs");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<double>("minAccuracy");
    // The README's settings: batch 64, lr 0.05, momentum 0.9 (the reference's too).
    QTest::newRow("1 epoch") << 1 << "constant" << 0.845; // PyTorch: 84.5-84.6 %
    QTest::newRow("5 epochs") << 5 << "cosine" << 0.89;   // no PyTorch reference
}

void TestFashionMnist::lenet5Accuracy()
{
    QFETCH(int, epochs);
    QFETCH(QString, schedule);
    QFETCH(double, minAccuracy);
    Model model(Zoo::spec("lenet5"), 0);
    TrainOptions options;
    options.epochs = epochs;
    options.batch = 64;
    options.lr = 0.05;
    options.schedule = LrSchedule::parse(schedule.toStdString());
    const TrainResult r = Trainer::run(model, *m_train, m_test.get(), options, {});
    QCOMPARE(int(r.epochs.size()), epochs);
    const double acc = r.epochs.back().test_accuracy;
    qInfo("LeNet-5, %d epoch(s), %s: test accuracy %.4f, %.0f img/s", epochs, qPrintable(schedule),
          acc, r.epochs.back().images_per_second);
    QVERIFY2(acc >= minAccuracy, qPrintable(QString::number(acc)));
    // Evaluating again gives the same figure (evaluation does not touch the model).
    QCOMPARE(Trainer::evaluate(model, *m_test, 1000).accuracy, acc);
}

void TestFashionMnist::cancelStopsAfterTheCurrentBatch()
{
    Model model(Zoo::spec("lenet5"), 0);
    std::atomic<bool> stop{false};
    std::int64_t batches = 0;
    Trainer::Callbacks callbacks;
    callbacks.onBatch = [&](const BatchProgress &p) {
        batches = p.batch;
        if (p.batch == 10)
            stop = true;
    };
    TrainOptions options;
    options.epochs = 3;
    const TrainResult r = Trainer::run(model, *m_train, m_test.get(), options, callbacks, &stop);
    QVERIFY(r.cancelled);
    QCOMPARE(batches, std::int64_t(10));
    QCOMPARE(r.images, std::int64_t(640));
}

QTEST_APPLESS_MAIN(TestFashionMnist)
#include "tst_fashionmnist.moc"
