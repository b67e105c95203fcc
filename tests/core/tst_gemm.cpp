// The GEMM seam: every backend against the double-precision triple loop.

#include "core/gemm.h"
#include "core/parallel.h"
#include "core/random.h"

#include <QTest>

#include <cmath>
#include <vector>

using namespace edgetrain::core;

Q_DECLARE_METATYPE(edgetrain::core::GemmBackend)

class TestGemm : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void matchesReference_data();
    void matchesReference();
    void rejectsUnknownBackend();
};

void TestGemm::matchesReference_data()
{
    QTest::addColumn<GemmBackend>("backend");
    QTest::addColumn<int>("M");
    QTest::addColumn<int>("N");
    QTest::addColumn<int>("K");
    QTest::addColumn<bool>("transA");
    QTest::addColumn<bool>("transB");
    QTest::addColumn<float>("beta");
    QTest::addColumn<int>("threads");
    struct Case
    {
        const char *name;
        int M, N, K;
        bool ta, tb;
        float beta;
    };
    // Shapes the engine uses: conv forward (O x P x K), weight gradient (A * B^T),
    // input gradient (A^T * B), linear layers, odd sizes and accumulation (beta = 1).
    const Case cases[] = {{"conv-fwd 6x784x25", 6, 784, 25, false, false, 0.0f},
                          {"conv-wgrad 16x150x100 (B^T)", 16, 150, 100, false, true, 1.0f},
                          {"conv-dgrad 150x100x16 (A^T)", 150, 100, 16, true, false, 0.0f},
                          {"linear 64x120x400 (B^T)", 64, 120, 400, false, true, 0.0f},
                          {"both transposed 33x17x29", 33, 17, 29, true, true, 0.5f},
                          {"large 257x259x263", 257, 259, 263, false, false, 1.0f},
                          {"one row 1x500x300", 1, 500, 300, false, false, 0.0f}};
    for (const GemmBackend backend : availableGemmBackends())
        for (const Case &c : cases)
            for (int threads : {1, 2})
                QTest::addRow("%s %s %dT", std::string(gemmBackendName(backend)).c_str(), c.name,
                              threads)
                    << backend << c.M << c.N << c.K << c.ta << c.tb << c.beta << threads;
}

void TestGemm::matchesReference()
{
    QFETCH(GemmBackend, backend);
    QFETCH(int, M);
    QFETCH(int, N);
    QFETCH(int, K);
    QFETCH(bool, transA);
    QFETCH(bool, transB);
    QFETCH(float, beta);
    QFETCH(int, threads);
    setThreadCount(threads);
    setGemmBackend(backend);
    Rng rng(42);
    // Stored shapes; leading dimensions padded by 3 to exercise strides.
    const int lda = (transA ? M : K) + 3, ldb = (transB ? K : N) + 3, ldc = N + 3;
    std::vector<float> a(std::size_t((transA ? K : M) * lda)),
        b(std::size_t((transB ? N : K) * ldb));
    std::vector<float> c(std::size_t(M * ldc));
    for (auto &v : a)
        v = rng.uniform(-1, 1);
    for (auto &v : b)
        v = rng.uniform(-1, 1);
    for (auto &v : c)
        v = rng.uniform(-1, 1);
    std::vector<float> expected = c;
    gemmReference(transA, transB, M, N, K, 0.75f, a.data(), lda, b.data(), ldb, beta,
                  expected.data(), ldc);
    gemm(transA, transB, M, N, K, 0.75f, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    double worst = 0.0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            const double e = expected[std::size_t(i * ldc + j)];
            worst =
                std::max(worst, std::fabs(c[std::size_t(i * ldc + j)] - e) / (1.0 + std::fabs(e)));
        }
    QVERIFY2(worst < 1e-4, qPrintable(QStringLiteral("worst relative error %1").arg(worst)));
    // The padding columns of C are left alone.
    QCOMPARE(c[std::size_t(N)], expected[std::size_t(N)]);
}

void TestGemm::rejectsUnknownBackend()
{
    QVERIFY_THROWS_EXCEPTION(std::exception, parseGemmBackend("openblas"));
}

QTEST_APPLESS_MAIN(TestGemm)
#include "tst_gemm.moc"
