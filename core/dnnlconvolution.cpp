#include "dnnlconvolution.h"

#include "error.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef EDGETRAIN_HAVE_DNNL
#include <dnnl.hpp>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace edgetrain::core::Internal {

#ifdef EDGETRAIN_HAVE_DNNL

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine &cpuEngine()
{
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

/** oneDNN parallelises over omp_get_max_threads(): make it this thread's engine count. */
void useThreads(int threads)
{
#ifdef _OPENMP
    if (!omp_in_parallel() && omp_get_max_threads() != threads)
        omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

/** One operand as the engine holds it (plain) and as the primitive wants it (inner), with the
 *  reorder between them in the direction the call needs. */
struct Operand
{
    memory::desc plain;
    memory::desc inner;
    dnnl::reorder reorder;

    bool reordered() const { return !(plain == inner); }
};

enum class Direction { In, Out };

Operand operand(const memory::desc &plain, const memory::desc &inner, Direction direction)
{
    Operand o{plain, inner, {}};
    if (o.reordered()) {
        const auto &from = direction == Direction::In ? plain : inner;
        const auto &to = direction == Direction::In ? inner : plain;
        o.reorder =
            dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), from, cpuEngine(), to));
    }
    return o;
}

/**
 * The Workspace tensors of one call: the inner copies of reordered operands and the
 * scratchpad. All are made before anything runs, so that a MemorySimulation sees the call's
 * peak; they are released when the call returns.
 */
class CallWorkspace
{
public:
    /** A buffer for `desc` when the operand is reordered, else null (the plain tensor serves). */
    float *reserve(const Operand &o) { return o.reordered() ? reserve(o.inner) : nullptr; }
    float *reserve(const memory::desc &desc)
    {
        const std::int64_t floats =
            std::int64_t((desc.get_size() + sizeof(float) - 1) / sizeof(float));
        if (floats == 0)
            return nullptr;
        m_tensors.emplace_back(Shape{floats}, MemoryCategory::Workspace);
        return m_tensors.back().data();
    }

private:
    std::vector<Tensor> m_tensors;
};

/** The memory object the primitive reads or writes: the inner buffer, or the plain tensor. */
memory innerMemory(const Operand &o, float *plain, float *inner)
{
    return o.reordered() ? memory(o.inner, cpuEngine(), inner)
                         : memory(o.plain, cpuEngine(), plain);
}

/** Copies a plain input into its inner buffer where the layouts differ. */
memory bringIn(dnnl::stream &stream, const Operand &o, const float *plain, float *inner)
{
    memory user(o.plain, cpuEngine(), const_cast<float *>(plain));
    if (!o.reordered())
        return user;
    memory m(o.inner, cpuEngine(), inner);
    o.reorder.execute(stream, user, m);
    return m;
}

void bringOut(dnnl::stream &stream, const Operand &o, memory inner, float *plain)
{
    if (!o.reordered())
        return;
    memory user(o.plain, cpuEngine(), plain);
    o.reorder.execute(stream, inner, user);
}

/** A failure inside oneDNN while running a primitive made for this shape (out of memory, an
 *  engine bug): the engine's own error type, so callers that catch core::Error see it. */
[[noreturn]] void fail(const char *call, const dnnl::error &e)
{
    throw Error(std::string("oneDNN convolution (") + call + ") failed: " + e.what());
}

dnnl::primitive_attr userScratchpad()
{
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

} // namespace

struct DnnlConvolution::Impl
{
    ConvShape shape;
    int threads = 1;
    memory::desc src, weights, bias, dst; // plain: NCHW, OIHW, X
    memory::dims strides, dilates, padding;
    dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct;

    dnnl::convolution_forward::primitive_desc forwardPd;
    dnnl::convolution_forward forward;
    Operand fSrc, fWeights, fDst;

    dnnl::convolution_backward_data::primitive_desc dataPd;
    dnnl::convolution_backward_data data;
    Operand dDiffDst, dWeights, dDiffSrc;
    dnnl::convolution_backward_weights::primitive_desc weightsPd;
    dnnl::convolution_backward_weights weightsPrimitive;
    Operand wSrc, wDiffDst, wDiffWeights;

    memory::desc any(const memory::desc &plain) const
    {
        return memory::desc(plain.dims(), memory::data_type::f32, Tag::any);
    }

    void makeForward()
    {
        const auto kind = dnnl::prop_kind::forward_training;
        const auto desc =
            shape.bias
                ? dnnl::convolution_forward::desc(kind, algorithm, any(src), any(weights), bias,
                                                  any(dst), strides, dilates, padding, padding)
                : dnnl::convolution_forward::desc(kind, algorithm, any(src), any(weights), any(dst),
                                                  strides, dilates, padding, padding);
        forwardPd = dnnl::convolution_forward::primitive_desc(desc, userScratchpad(), cpuEngine());
        forward = dnnl::convolution_forward(forwardPd);
        fSrc = operand(src, forwardPd.src_desc(), Direction::In);
        fWeights = operand(weights, forwardPd.weights_desc(), Direction::In);
        fDst = operand(dst, forwardPd.dst_desc(), Direction::Out);
    }

    void makeBackwardData()
    {
        const dnnl::convolution_backward_data::desc desc(
            algorithm, any(src), any(weights), any(dst), strides, dilates, padding, padding);
        dataPd = dnnl::convolution_backward_data::primitive_desc(desc, userScratchpad(),
                                                                 cpuEngine(), forwardPd);
        data = dnnl::convolution_backward_data(dataPd);
        dDiffDst = operand(dst, dataPd.diff_dst_desc(), Direction::In);
        dWeights = operand(weights, dataPd.weights_desc(), Direction::In);
        dDiffSrc = operand(src, dataPd.diff_src_desc(), Direction::Out);
    }

    void makeBackwardWeights()
    {
        const auto desc =
            shape.bias ? dnnl::convolution_backward_weights::desc(algorithm, any(src), any(weights),
                                                                  bias, any(dst), strides, dilates,
                                                                  padding, padding)
                       : dnnl::convolution_backward_weights::desc(algorithm, any(src), any(weights),
                                                                  any(dst), strides, dilates,
                                                                  padding, padding);
        weightsPd = dnnl::convolution_backward_weights::primitive_desc(desc, userScratchpad(),
                                                                       cpuEngine(), forwardPd);
        weightsPrimitive = dnnl::convolution_backward_weights(weightsPd);
        wSrc = operand(src, weightsPd.src_desc(), Direction::In);
        wDiffDst = operand(dst, weightsPd.diff_dst_desc(), Direction::In);
        wDiffWeights = operand(weights, weightsPd.diff_weights_desc(), Direction::Out);
    }
};

bool DnnlConvolution::available()
{
#ifdef _OPENMP
    return true;
#else
    return false; // oneDNN would run on its own thread count, not the engine's one thread
#endif
}

bool DnnlConvolution::winogradSuits(const ConvShape &shape)
{
    return shape.kernel == 3 && shape.stride == 1 && shape.dilation == 1 &&
           std::min(shape.C, shape.O) >= 24;
}

std::shared_ptr<const DnnlConvolution> DnnlConvolution::forShape(const ConvShape &shape,
                                                                 int threads)
{
    // One entry per (shape, threads): made once, outside the cache's lock (making primitives
    // compiles kernels: milliseconds), and null for good where oneDNN has no primitive.
    struct Entry
    {
        std::once_flag made;
        std::shared_ptr<const DnnlConvolution> convolution;
    };
    static std::mutex mutex;
    static std::map<std::pair<ConvShape, int>, std::shared_ptr<Entry>> cache;
    std::shared_ptr<Entry> entry;
    {
        const std::lock_guard lock(mutex);
        if (cache.size() >= 512) // shapes come and go (batch sizes, frame sizes): keep it bounded
            cache.clear();       // (entries in use live on in their holders' shared_ptr)
        auto &slot = cache[{shape, threads}];
        if (!slot)
            slot = std::make_shared<Entry>();
        entry = slot;
    }
    std::call_once(entry->made, [&] {
        auto impl = std::make_unique<Impl>();
        impl->shape = shape;
        impl->threads = threads;
        impl->src =
            memory::desc({shape.N, shape.C, shape.H, shape.W}, memory::data_type::f32, Tag::nchw);
        impl->weights = memory::desc({shape.O, shape.C, shape.kernel, shape.kernel},
                                     memory::data_type::f32, Tag::oihw);
        impl->bias = memory::desc({shape.O}, memory::data_type::f32, Tag::x);
        impl->dst =
            memory::desc({shape.N, shape.O, shape.OH, shape.OW}, memory::data_type::f32, Tag::nchw);
        impl->strides = {shape.stride, shape.stride};
        impl->dilates = {shape.dilation - 1, shape.dilation - 1};
        impl->padding = {shape.padding, shape.padding};
        auto make = [&](dnnl::algorithm algorithm) {
            impl->algorithm = algorithm;
            useThreads(threads);
            impl->makeForward();
            impl->makeBackwardData();
            impl->makeBackwardWeights();
        };
        try {
            try {
                make(shape.winograd ? dnnl::algorithm::convolution_winograd
                                    : dnnl::algorithm::convolution_direct);
            } catch (const dnnl::error &) {
                if (impl->algorithm == dnnl::algorithm::convolution_direct)
                    throw;
                make(dnnl::algorithm::convolution_direct); // no Winograd kernel on this CPU
            }
        } catch (const dnnl::error &) {
            return; // no primitive for this shape: the caller keeps im2col + GEMM
        }
        entry->convolution.reset(new DnnlConvolution(std::move(impl)));
    });
    return entry->convolution;
}

DnnlConvolution::DnnlConvolution(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

DnnlConvolution::~DnnlConvolution() = default;

void DnnlConvolution::forward(const Tensor &x, const Tensor &weight, const Tensor *bias,
                              Tensor &y) const
{
    const Impl &d = *m_impl;
    CallWorkspace workspace;
    float *src = workspace.reserve(d.fSrc);
    float *wei = workspace.reserve(d.fWeights);
    float *dst = workspace.reserve(d.fDst);
    float *scratch = workspace.reserve(d.forwardPd.scratchpad_desc());
    if (x.isVirtual() || y.isVirtual())
        return;
    try {
        useThreads(d.threads);
        dnnl::stream stream(cpuEngine());
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, bringIn(stream, d.fSrc, x.data(), src)},
            {DNNL_ARG_WEIGHTS, bringIn(stream, d.fWeights, weight.data(), wei)},
            {DNNL_ARG_DST, innerMemory(d.fDst, y.data(), dst)},
            {DNNL_ARG_SCRATCHPAD, memory(d.forwardPd.scratchpad_desc(), cpuEngine(), scratch)}};
        if (bias)
            args.emplace(DNNL_ARG_BIAS,
                         memory(d.bias, cpuEngine(), const_cast<float *>(bias->data())));
        d.forward.execute(stream, args);
        bringOut(stream, d.fDst, args.at(DNNL_ARG_DST), y.data());
        stream.wait();
    } catch (const dnnl::error &e) {
        fail("forward", e);
    }
}

void DnnlConvolution::backward(const Tensor &x, const Tensor &dy, const Tensor &weight,
                               Tensor &dweight, Tensor *dbias, Tensor *dx) const
{
    const Impl &d = *m_impl;
    // dy in the weights' primitive's layout, kept for the data's when it wants the same one
    // (it usually does): one reorder of dy instead of two.
    const bool shareDiffDst = dx && d.wDiffDst.inner == d.dDiffDst.inner;
    CallWorkspace shared;
    float *diffDst = shared.reserve(d.wDiffDst);
    const bool isVirtual = x.isVirtual() || dy.isVirtual();
    try {
        useThreads(d.threads);
        dnnl::stream stream(cpuEngine());
        memory diffDstMemory;
        {
            CallWorkspace workspace;
            float *src = workspace.reserve(d.wSrc);
            float *diffWeights = workspace.reserve(d.wDiffWeights);
            float *scratch = workspace.reserve(d.weightsPd.scratchpad_desc());
            if (!isVirtual) {
                memory out = innerMemory(d.wDiffWeights, dweight.data(), diffWeights);
                diffDstMemory = bringIn(stream, d.wDiffDst, dy.data(), diffDst);
                std::unordered_map<int, memory> args{
                    {DNNL_ARG_SRC, bringIn(stream, d.wSrc, x.data(), src)},
                    {DNNL_ARG_DIFF_DST, diffDstMemory},
                    {DNNL_ARG_DIFF_WEIGHTS, out},
                    {DNNL_ARG_SCRATCHPAD,
                     memory(d.weightsPd.scratchpad_desc(), cpuEngine(), scratch)}};
                if (dbias)
                    args.emplace(DNNL_ARG_DIFF_BIAS, memory(d.bias, cpuEngine(), dbias->data()));
                d.weightsPrimitive.execute(stream, args);
                bringOut(stream, d.wDiffWeights, out, dweight.data());
                stream.wait();
            }
        }
        if (!dx)
            return;
        CallWorkspace workspace;
        float *ownDiffDst = shareDiffDst ? nullptr : workspace.reserve(d.dDiffDst);
        float *wei = workspace.reserve(d.dWeights);
        float *diffSrc = workspace.reserve(d.dDiffSrc);
        float *scratch = workspace.reserve(d.dataPd.scratchpad_desc());
        if (isVirtual || dx->isVirtual())
            return;
        if (!shareDiffDst)
            diffDstMemory = bringIn(stream, d.dDiffDst, dy.data(), ownDiffDst);
        memory out = innerMemory(d.dDiffSrc, dx->data(), diffSrc);
        d.data.execute(stream, {{DNNL_ARG_DIFF_DST, diffDstMemory},
                                {DNNL_ARG_WEIGHTS, bringIn(stream, d.dWeights, weight.data(), wei)},
                                {DNNL_ARG_DIFF_SRC, out},
                                {DNNL_ARG_SCRATCHPAD,
                                 memory(d.dataPd.scratchpad_desc(), cpuEngine(), scratch)}});
        bringOut(stream, d.dDiffSrc, out, dx->data());
        stream.wait();
    } catch (const dnnl::error &e) {
        fail("backward", e);
    }
}

std::string DnnlConvolution::implementation() const
{
    return m_impl->forwardPd.impl_info_str();
}

bool DnnlConvolution::winograd() const
{
    return m_impl->algorithm == dnnl::algorithm::convolution_winograd;
}

#else // no oneDNN: nothing to offer; Conv2d keeps im2col + GEMM

struct DnnlConvolution::Impl
{};

bool DnnlConvolution::available()
{
    return false;
}

bool DnnlConvolution::winogradSuits(const ConvShape &)
{
    return false;
}

std::shared_ptr<const DnnlConvolution> DnnlConvolution::forShape(const ConvShape &, int)
{
    return nullptr;
}

DnnlConvolution::DnnlConvolution(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
DnnlConvolution::~DnnlConvolution() = default;
void DnnlConvolution::forward(const Tensor &, const Tensor &, const Tensor *, Tensor &) const {}
void DnnlConvolution::backward(const Tensor &, const Tensor &, const Tensor &, Tensor &, Tensor *,
                               Tensor *) const
{}
std::string DnnlConvolution::implementation() const
{
    return {};
}

bool DnnlConvolution::winograd() const
{
    return false;
}

#endif

} // namespace edgetrain::core::Internal
