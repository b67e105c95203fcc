#include "gemm.h"

#include "eigentypes.h"
#include "error.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#ifdef EDGETRAIN_HAVE_DNNL
#include <dnnl.h>
#endif

namespace edgetrain::core {

namespace {

GemmBackend initialBackend()
{
    if (const char *env = std::getenv("EDGETRAIN_GEMM"); env && *env)
        return parseGemmBackend(env);
#ifdef EDGETRAIN_HAVE_DNNL
    return GemmBackend::Dnnl;
#else
    return GemmBackend::Eigen;
#endif
}

GemmBackend &currentBackend()
{
    static GemmBackend backend = initialBackend();
    return backend;
}

void gemmEigen(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K,
               float alpha, const float *A, std::int64_t lda, const float *B, std::int64_t ldb,
               float beta, float *C, std::int64_t ldc)
{
    MatrixMap c(C, M, N, Eigen::OuterStride<>(ldc));
    const ConstMatrixMap a(A, transA ? K : M, transA ? M : K, Eigen::OuterStride<>(lda));
    const ConstMatrixMap b(B, transB ? N : K, transB ? K : N, Eigen::OuterStride<>(ldb));
    if (beta == 0.0f)
        c.setZero();
    else if (beta != 1.0f)
        c *= beta;
    if (!transA && !transB)
        c.noalias() += alpha * a * b;
    else if (transA && !transB)
        c.noalias() += alpha * a.transpose() * b;
    else if (!transA && transB)
        c.noalias() += alpha * a * b.transpose();
    else
        c.noalias() += alpha * a.transpose() * b.transpose();
}

} // namespace

void gemm(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float *A, std::int64_t lda, const float *B, std::int64_t ldb, float beta, float *C,
          std::int64_t ldc)
{
    if (M == 0 || N == 0)
        return;
#ifdef EDGETRAIN_HAVE_DNNL
    if (currentBackend() == GemmBackend::Dnnl) {
        const auto status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, N, K, alpha, A,
                                       lda, B, ldb, beta, C, ldc);
        if (status == dnnl_success)
            return;
        // oneDNN only fails on invalid arguments, which are engine bugs: fall through to Eigen
        // so that the result is still right, and let the tests catch it.
    }
#endif
    gemmEigen(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemmReference(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K,
                   float alpha, const float *A, std::int64_t lda, const float *B, std::int64_t ldb,
                   float beta, float *C, std::int64_t ldc)
{
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            double sum = 0.0;
            for (std::int64_t k = 0; k < K; ++k) {
                const double a = transA ? A[k * lda + i] : A[i * lda + k];
                const double b = transB ? B[j * ldb + k] : B[k * ldb + j];
                sum += a * b;
            }
            float &c = C[i * ldc + j];
            c = static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : double(beta) * c));
        }
}

std::vector<GemmBackend> availableGemmBackends()
{
#ifdef EDGETRAIN_HAVE_DNNL
    return {GemmBackend::Eigen, GemmBackend::Dnnl};
#else
    return {GemmBackend::Eigen};
#endif
}

GemmBackend gemmBackend()
{
    return currentBackend();
}

void setGemmBackend(GemmBackend backend)
{
#ifndef EDGETRAIN_HAVE_DNNL
    if (backend == GemmBackend::Dnnl)
        throw SpecError("GEMM backend 'dnnl' is not built in (install libdnnl-dev and rebuild)");
#endif
    currentBackend() = backend;
}

std::string_view gemmBackendName(GemmBackend backend)
{
    return backend == GemmBackend::Dnnl ? "dnnl" : "eigen";
}

GemmBackend parseGemmBackend(std::string_view name)
{
    if (name == "eigen")
        return GemmBackend::Eigen;
    if (name == "dnnl")
        return GemmBackend::Dnnl;
    throw SpecError("unknown GEMM backend '" + std::string(name) + "' (expected eigen or dnnl)");
}

double measureGemmGflops(std::int64_t n, int repeats)
{
    std::vector<float> a(std::size_t(n * n)), b(std::size_t(n * n)), c(std::size_t(n * n));
    for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
        b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    std::vector<double> seconds;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    return 2.0 * double(n) * double(n) * double(n) / seconds[seconds.size() / 2] / 1e9;
}

double measureGemmThroughput(std::int64_t n, std::chrono::duration<double> wall)
{
    std::vector<float> a(std::size_t(n * n)), b(std::size_t(n * n)), c(std::size_t(n * n));
    for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
        b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const auto start = std::chrono::steady_clock::now();
    std::int64_t products = 0;
    std::chrono::duration<double> elapsed{0};
    while (elapsed < wall || products == 0) {
        gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        ++products;
        elapsed = std::chrono::steady_clock::now() - start;
    }
    return 2.0 * double(n) * double(n) * double(n) * double(products) / elapsed.count() / 1e9;
}

} // namespace edgetrain::core
