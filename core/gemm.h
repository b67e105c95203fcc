#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

namespace edgetrain::core {

/**
 * The one seam every matrix product in the engine goes through.
 *
 * Row-major C[M x N] = alpha * op(A) * op(B) + beta * C, where op(A) is M x K and op(B) is K x N;
 * lda/ldb/ldc are the row strides of A, B and C as stored. Called from inside an OpenMP
 * parallel region it runs on the calling thread only; outside one it may use all engine threads.
 *
 * Backends: Eigen (portable, NEON on ARM) is always there; oneDNN's sgemm is used where
 * libdnnl is installed, because it measured faster on x86 (see README, "GEMM backends").
 */
enum class GemmBackend { Eigen, Dnnl };

void gemm(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float *A, std::int64_t lda, const float *B, std::int64_t ldb, float beta, float *C,
          std::int64_t ldc);

/** The textbook triple loop, in double precision: the reference the fast path is tested against. */
void gemmReference(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K,
                   float alpha, const float *A, std::int64_t lda, const float *B, std::int64_t ldb,
                   float beta, float *C, std::int64_t ldc);

std::vector<GemmBackend> availableGemmBackends();
GemmBackend gemmBackend();
/** Selects the backend; throws SpecError if it was not built in. */
void setGemmBackend(GemmBackend backend);
std::string_view gemmBackendName(GemmBackend backend); // "eigen", "dnnl"
/** "eigen" / "dnnl" -> backend; throws SpecError for anything else. */
GemmBackend parseGemmBackend(std::string_view name);

/** GFLOP/s of C = A * B (square, size n) with the current backend and this thread's engine
 *  threads: the median of `repeats` products after one warm-up. How fast a device is, as
 *  `edgetrain-cli bench --gemm-size` prints it and device profiles state it. */
double measureGemmGflops(std::int64_t n, int repeats);
/** GFLOP/s of back-to-back products (square, size n) over `wall` of wall-clock time: what a
 *  process gets from the CPU it may use, throttling included (a single product may fit in one
 *  burst of a CPU quota and would look unthrottled). */
double measureGemmThroughput(std::int64_t n, std::chrono::duration<double> wall);

} // namespace edgetrain::core
