#include "gradcheck.h"

#include "core/random.h"

#include <cmath>

namespace edgetrain::tests {

using namespace core;

Tensor randomTensor(const Shape &shape, std::uint64_t seed, float scale)
{
    Tensor t(shape, MemoryCategory::Activations);
    Rng rng(seed);
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        // Sum of uniforms: cheap, smooth, no exact zeros.
        const float v = rng.uniform() + rng.uniform() + rng.uniform() - 1.5f;
        t.data()[i] = 2.0f * v * scale;
    }
    return t;
}

GradCheckReport gradCheck(Stage &stage, const Shape &inputShape, const PassContext &ctx,
                          std::uint64_t seed, int perTensor)
{
    Tensor x = randomTensor(inputShape, seed);
    const Shape outShape = stage.outputShape(inputShape);
    const Tensor r = randomTensor(outShape, seed + 1);
    PassContext numericCtx = ctx;
    numericCtx.recompute = true; // no running-statistics updates while probing

    auto loss = [&]() {
        const Tensor y = stage.forward(x, nullptr, numericCtx);
        double sum = 0.0;
        for (std::int64_t i = 0; i < y.numel(); ++i)
            sum += double(y.data()[i]) * double(r.data()[i]);
        return sum;
    };

    StageCache cache;
    stage.forward(x, &cache, ctx);
    const Tensor dx = stage.backward(r, cache, ctx, true).clone(MemoryCategory::Activations);
    cache = StageCache();

    struct Probe
    {
        std::string name;
        Tensor *value;
        Tensor analytic;
    };
    std::vector<Probe> probes{{"input", &x, dx}};
    stage.forEachLayer([&](const std::string &prefix, Layer &layer) {
        for (Parameter *p : layer.parameters())
            probes.push_back(
                {prefix + "." + p->name, &p->value, p->grad.clone(MemoryCategory::Gradients)});
    });

    const double base = loss();
    GradCheckReport report;
    Rng pick(seed + 2);
    const double eps = 1e-3, atol = 3e-3, rtol = 3e-2;
    for (Probe &probe : probes) {
        const std::int64_t n = probe.value->numel();
        const int count = int(std::min<std::int64_t>(n, perTensor));
        for (int k = 0; k < count; ++k) {
            const std::int64_t i = n <= perTensor ? k : std::int64_t(pick.below(std::uint64_t(n)));
            float &v = probe.value->data()[i];
            const float saved = v;
            v = saved + float(eps);
            const double plus = loss();
            v = saved - float(eps);
            const double minus = loss();
            v = saved;
            const double numeric = (plus - minus) / (2.0 * eps);
            // A ReLU or max-pool kink inside [v - eps, v + eps] makes the one-sided slopes
            // disagree; such a coordinate says nothing about backward(), so it is skipped.
            const double right = (plus - base) / eps, left = (base - minus) / eps;
            if (std::fabs(right - left) > atol + rtol * std::fabs(numeric)) {
                ++report.skipped;
                continue;
            }
            const double analytic = probe.analytic.data()[i];
            const double err = std::fabs(analytic - numeric) / (atol + rtol * std::fabs(numeric));
            ++report.checked;
            if (err > report.worst) {
                report.worst = err;
                report.where = probe.name + "[" + std::to_string(i) + "]: analytic " +
                               std::to_string(analytic) + ", numeric " + std::to_string(numeric);
            }
        }
    }
    return report;
}

} // namespace edgetrain::tests
