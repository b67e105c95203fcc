#pragma once

#include "tensor.h"

#include <compare>
#include <cstdint>
#include <memory>

namespace edgetrain::core::Internal {

/** The sizes of one convolution call (NCHW input, OIHW weights, square kernel). */
struct ConvShape
{
    std::int64_t N = 0;
    int C = 0, H = 0, W = 0, O = 0, OH = 0, OW = 0;
    int kernel = 0, stride = 1, padding = 0;
    int dilation = 1; // the engine's (taps this far apart); oneDNN counts the gaps: dilation - 1
    bool bias = false;
    /** Winograd F(4x4, 3x3) instead of direct convolution (where winogradSuits() and the CPU
     *  has the kernels; else direct all the same). */
    bool winograd = false;
    auto operator<=>(const ConvShape &) const = default;
};

/**
 * oneDNN's convolution primitives for one shape: forward, backward data and backward weights,
 * without a materialised im2col; direct, or Winograd where asked for (ConvShape::winograd). oneDNN
 * runs them in the layouts it chooses for this CPU (channels in blocks of 8 or 16 on x86); the
 * engine's tensors stay NCHW / OIHW, so each call reorders its operands in and its result out,
 * through Workspace tensors the MemoryAccountant sees (and a MemorySimulation counts: the calls
 * allocate the same tensors there and compute nothing). oneDNN's own scratchpad is one of those
 * tensors, not a hidden allocation.
 *
 * Instances are shared per shape and thread count and are safe to use from several threads
 * at once. Each call runs on this thread's engine threads (oneDNN shares the engine's OpenMP
 * runtime). Not for calls inside an OpenMP parallel region: oneDNN would run one thread of a
 * kernel split for several (Conv2d keeps im2col + GEMM there). Results agree with the
 * im2col + GEMM path within float rounding (other summation orders). A failure inside oneDNN
 * while a call runs throws core::Error.
 */
class DnnlConvolution
{
public:
    /**
     * Where Winograd F(4x4, 3x3) measured faster than oneDNN's direct kernels on this machine
     * (AVX-512, one thread, forward + both backward): 3x3 stride-1 convolutions with at least
     * 24 channels in and out — the detector's 24/32/48-channel layers 1.5-2.0x, ResNet's 32-
     * and 64-channel ones 1.3-1.6x; ResNet's 16-channel 32x32 layers were slower. Its price:
     * 6.5-10.5 MiB of scratchpad per call (direct: none), which the memory planner counts.
     */
    static bool winogradSuits(const ConvShape &shape);
    /** Whether oneDNN is built in (libdnnl-dev on amd64; not on the arm64 build) with OpenMP
     *  (not in the fuzz build, whose engine has one thread that oneDNN would not keep to). */
    static bool available();
    /** The primitives for `shape` on `threads` threads (forward and both backward), made on
     *  first use and cached; null where oneDNN is not available or has no primitive for the
     *  shape (remembered: it is not searched for again). */
    static std::shared_ptr<const DnnlConvolution> forShape(const ConvShape &shape, int threads);

    ~DnnlConvolution();
    DnnlConvolution(const DnnlConvolution &) = delete;
    DnnlConvolution &operator=(const DnnlConvolution &) = delete;

    /** y = conv(x, weight) + bias. `bias` is null when the shape has none. */
    void forward(const Tensor &x, const Tensor &weight, const Tensor *bias, Tensor &y) const;
    /** dweight (and dbias where the shape has one) overwritten with this batch's gradients,
     *  then, where `dx` is given, the input's gradient into it. The weights' part runs first
     *  and its workspace is gone before the input's is made; dy is reordered once for both
     *  where their primitives want the same layout. */
    void backward(const Tensor &x, const Tensor &dy, const Tensor &weight, Tensor &dweight,
                  Tensor *dbias, Tensor *dx) const;

    /** oneDNN's names for the kernels it chose ("jit:avx512_core", "jit_wino_4x3:..."). */
    std::string implementation() const;
    /** Winograd rather than direct convolution (asked for, and the CPU has the kernels):
     *  fewer multiplications, a little more rounding (within what tst_layers allows). */
    bool winograd() const;

    struct Impl;

private:
    explicit DnnlConvolution(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace edgetrain::core::Internal
