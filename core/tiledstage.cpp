#include "tiledstage.h"

#include "avgpool2d.h"
#include "batchnorm2d.h"
#include "conv2d.h"
#include "error.h"
#include "maxpool2d.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::core {

namespace {

AxisWindow poolWindow(const Pool2dOptions &o)
{
    return {o.kernel, o.stride, o.padding, 1};
}

/** The layer's window, or nullopt for a layer a tile group cannot take. */
std::optional<TileLayerWindow> windowOf(Layer &layer)
{
    if (auto *conv = dynamic_cast<Conv2d *>(&layer)) {
        const auto &o = conv->options();
        const AxisWindow w{o.kernel, o.stride, o.padding, o.dilation};
        return TileLayerWindow{w, w, false};
    }
    if (auto *pool = dynamic_cast<MaxPool2d *>(&layer))
        return TileLayerWindow{poolWindow(pool->options()), poolWindow(pool->options()), false};
    if (auto *pool = dynamic_cast<AvgPool2d *>(&layer))
        return TileLayerWindow{poolWindow(pool->options()), poolWindow(pool->options()), false};
    if (dynamic_cast<BatchNorm2d *>(&layer))
        return TileLayerWindow{{}, {}, true};
    if (layer.type() == "relu")
        return TileLayerWindow{{}, {}, false};
    return std::nullopt;
}

/** The window of a tile's tensor at a layer's input that `span` covers (both in map terms). */
tiles::Window relative(const TileAxisStep &r, const TileAxisStep &c, const Span &rows,
                       const Span &cols)
{
    return {{rows.begin - r.input.begin, rows.end - r.input.begin},
            {cols.begin - c.input.begin, cols.end - c.input.begin}};
}

/** The kept part of a layer's crop output, relative to that output. */
tiles::Window keptOfOutput(const TileAxisStep &r, const TileAxisStep &c)
{
    return {{r.output.begin - r.outputOrigin, r.output.end - r.outputOrigin},
            {c.output.begin - c.outputOrigin, c.output.end - c.outputOrigin}};
}

bool keepsAll(const TileAxisStep &r, const TileAxisStep &c, const Shape &out)
{
    return r.output.begin == r.outputOrigin && c.output.begin == c.outputOrigin &&
           r.output.size() == out[2] && c.output.size() == out[3];
}

} // namespace

std::string TiledStage::refusal(Stage &stage)
{
    if (stage.type() != "sequential")
        return "stage '" + stage.name() + "' is a " + std::string(stage.type()) +
               " (a tile group takes plain sequences of layers)";
    std::string why;
    stage.forEachLayer([&](const std::string &name, Layer &layer) {
        if (why.empty() && !windowOf(layer))
            why = "layer '" + name + "' is a " + std::string(layer.type()) +
                  " (a tile group takes conv2d, batchnorm2d, relu, maxpool2d, avgpool2d)";
    });
    return why;
}

TiledStage::TiledStage(std::vector<std::unique_ptr<Stage>> stages, int gridRows, int gridCols)
    : Stage(""), m_stages(std::move(stages)), m_gridRows(gridRows), m_gridCols(gridCols)
{
    if (m_stages.empty())
        throw SpecError("a tile group needs at least one stage");
    if (gridRows < 1 || gridCols < 1)
        throw SpecError("a tile grid needs at least one row and one column");
    std::size_t params = 0;
    for (auto &stage : m_stages) {
        if (const std::string why = refusal(*stage); !why.empty())
            throw SpecError("cannot tile " + why);
        stage->forEachLayer([&](const std::string &, Layer &layer) {
            m_layers.push_back({&layer, dynamic_cast<BatchNorm2d *>(&layer), *windowOf(layer),
                                params, layer.type() == "relu"});
            params += layer.parameters().size();
        });
    }
}

std::optional<std::size_t> TiledStage::tailNorm() const
{
    // A ReLU must follow: the backward sums read where it passed its input from the output.
    bool relu = false;
    for (std::size_t l = m_layers.size(); l-- > 0;) {
        if (m_layers[l].norm)
            return relu ? std::optional(l) : std::nullopt;
        if (!m_layers[l].relu)
            return std::nullopt;
        relu = true;
    }
    return std::nullopt;
}

Shape TiledStage::outputShape(const Shape &input) const
{
    Shape s = input;
    for (const auto &stage : m_stages)
        s = stage->outputShape(s);
    return s;
}

void TiledStage::forEachLayer(const std::function<void(const std::string &, Layer &)> &fn)
{
    for (auto &stage : m_stages)
        stage->forEachLayer(fn);
}

double TiledStage::forwardFlops(const Shape &input) const
{
    double flops = 0.0;
    Shape s = input;
    for (const auto &stage : m_stages) {
        flops += stage->forwardFlops(s);
        s = stage->outputShape(s);
    }
    return flops;
}

Json TiledStage::spec() const
{
    Json stages = Json::array();
    for (const auto &stage : m_stages)
        stages.push(stage->spec());
    Json tiles = Json::array();
    tiles.push(m_gridRows);
    tiles.push(m_gridCols);
    Json j;
    j.set("type", "tiled").set("tiles", std::move(tiles)).set("stages", std::move(stages));
    return j;
}

const TileGeometry &TiledStage::geometry(const Shape &input) const
{
    if (input.rank() != 4)
        throw ShapeError("a tile group expects [N, C, H, W]; got " + input.toString());
    outputShape(input); // the layers' own shape checks, with their names
    if (!m_geometry || m_geometry->first != input) {
        std::vector<TileLayerWindow> windows;
        for (const auto &l : m_layers)
            windows.push_back(l.window);
        m_geometry.emplace(
            input, TileGeometry(std::move(windows), input[2], input[3], m_gridRows, m_gridCols));
    }
    return m_geometry->second;
}

std::vector<std::size_t> TiledStage::normLayers() const
{
    std::vector<std::size_t> out;
    for (std::size_t l = 0; l < m_layers.size(); ++l)
        if (m_layers[l].norm)
            out.push_back(l);
    return out;
}

std::vector<const TileSteps *> TiledStage::ownTiles(const TileGeometry &g) const
{
    std::vector<const TileSteps *> out;
    for (std::size_t i = 0; i < g.tiles().size(); ++i)
        if (!m_team || int(i % std::size_t(m_team->size)) == m_team->rank)
            out.push_back(&g.tiles()[i]);
    return out;
}

void TiledStage::teamMoments(tiles::ChannelMoments &m, const BatchNorm2d &) const
{
    // Two sums, no state: the team's mean from every rank's count and sum, then each rank's
    // squared deviations about it (its own about its mean, moved to the team's: exact).
    const std::size_t C = m.mean.size();
    const double n = double(m.count);
    std::vector<double> v(C + 1, 0.0);
    for (std::size_t c = 0; c < C; ++c)
        v[c] = n * m.mean[c];
    v[C] = n;
    m_team->sumDoubles(v.data(), v.size());
    const double total = v[C];
    std::vector<double> m2(C, 0.0);
    for (std::size_t c = 0; c < C; ++c) {
        const double mean = total > 0.0 ? v[c] / total : 0.0;
        const double d = m.mean[c] - mean;
        m2[c] = m.m2[c] + n * d * d;
        m.mean[c] = mean;
    }
    m_team->sumDoubles(m2.data(), m2.size());
    m.count = std::int64_t(std::llround(total));
    m.m2 = std::move(m2);
}

std::vector<int> TiledStage::normChannels() const
{
    std::vector<int> out;
    for (const auto &l : m_layers)
        if (l.norm)
            out.push_back(l.norm->channels());
    return out;
}

Tensor TiledStage::runTile(const Tensor &x, const TileSteps &t, std::size_t end,
                           const Statistics &stats, std::vector<LayerCache> *caches,
                           std::size_t cacheFrom, const PassContext &ctx) const
{
    const TileAxisStep &r0 = t.rows.front(), &c0 = t.cols.front();
    Tensor h = tiles::crop(x, {r0.input, c0.input}, MemoryCategory::Activations);
    std::size_t norm = 0;
    for (std::size_t l = 0; l < end; ++l) {
        const GroupLayer &gl = m_layers[l];
        LayerCache *cache = caches && l >= cacheFrom ? &(*caches)[l] : nullptr;
        if (gl.norm) {
            auto params = gl.norm->parameters();
            if (cache) {
                cache->tensors = {h};
                cache->inputShape = h.shape();
            }
            // A ReLU after it runs in the same pass; its cache is its output, as ReLU leaves it.
            const bool relu = l + 1 < end && m_layers[l + 1].relu;
            h = tiles::normalize(h, stats[norm++], params[0]->value.data(), params[1]->value.data(),
                                 relu);
            if (!keepsAll(t.rows[l], t.cols[l], h.shape())) // only what the next layer reads
                h = tiles::crop(h, keptOfOutput(t.rows[l], t.cols[l]), MemoryCategory::Activations);
            if (relu) {
                ++l;
                if (caches && l >= cacheFrom)
                    (*caches)[l] = LayerCache{{h}, h.shape()};
            }
            continue;
        }
        const Shape inShape = h.shape();
        h = gl.layer->forward(h, cache, ctx);
        if (cache)
            cache->inputShape = inShape;
        if (!keepsAll(t.rows[l], t.cols[l], h.shape()))
            h = tiles::crop(h, keptOfOutput(t.rows[l], t.cols[l]), MemoryCategory::Activations);
    }
    return h;
}

TiledStage::Statistics TiledStage::runningStatistics() const
{
    Statistics out;
    for (const auto &l : m_layers) {
        if (!l.norm)
            continue;
        tiles::NormStatistics s;
        for (const LayerBuffer &b : l.norm->buffers()) {
            if (!b.tensor || !b.tensor->data()) // virtual weights: the values do not matter
                continue;
            if (b.name == "running_mean")
                s.mean.assign(b.tensor->data(), b.tensor->data() + b.tensor->numel());
            if (b.name == "running_var")
                for (std::int64_t c = 0; c < b.tensor->numel(); ++c)
                    s.invStd.push_back(
                        float(1.0 / std::sqrt(double(b.tensor->data()[c]) + l.norm->eps())));
        }
        s.mean.resize(std::size_t(l.norm->channels()), 0.0f);
        s.invStd.resize(std::size_t(l.norm->channels()), 1.0f);
        out.push_back(std::move(s));
    }
    return out;
}

TiledStage::Statistics TiledStage::gatherStatistics(const Tensor &x, const TileGeometry &g,
                                                    const PassContext &ctx,
                                                    std::vector<tiles::ChannelMoments> &moments,
                                                    Tensor *y) const
{
    Statistics stats;
    for (std::size_t l : normLayers()) {
        const BatchNorm2d &norm = *m_layers[l].norm;
        tiles::ChannelMoments m(norm.channels());
        const bool tail = y && tailNorm() == l;
        for (const TileSteps *own : ownTiles(g)) {
            const TileSteps &t = *own;
            const Tensor h = runTile(x, t, l, stats, nullptr, 0, ctx);
            const tiles::Window owned =
                relative(t.rows[l], t.cols[l], t.rows[l].owned, t.cols[l].owned);
            m.add(h, owned);
            // The last norm's map is the output's, its owned parts the output's cores: the
            // values it normalises go straight to the output, saving a pass over the tiles.
            if (tail)
                tiles::place(tiles::crop(h, owned, MemoryCategory::Activations), *y,
                             {t.rows[l].owned, t.cols[l].owned});
        }
        if (m_team && !x.isVirtual())
            teamMoments(m, norm);
        if (m.count < 2)
            throw ShapeError("layer '" + norm.name() +
                             "' (batchnorm2d): training needs more than one value per channel");
        tiles::NormStatistics s;
        const auto var = m.variance();
        for (std::size_t c = 0; c < var.size(); ++c) {
            s.mean.push_back(float(m.mean[c]));
            s.invStd.push_back(float(1.0 / std::sqrt(var[c] + norm.eps())));
        }
        stats.push_back(std::move(s));
        moments.push_back(std::move(m));
    }
    return stats;
}

Tensor TiledStage::pack(const Statistics &stats) const
{
    std::int64_t n = 0;
    for (const auto &s : stats)
        n += 2 * std::int64_t(s.mean.size());
    Tensor out({std::max<std::int64_t>(n, 1)}, MemoryCategory::Activations);
    if (out.isVirtual())
        return out;
    float *p = out.data();
    for (const auto &s : stats) {
        p = std::copy(s.mean.begin(), s.mean.end(), p);
        p = std::copy(s.invStd.begin(), s.invStd.end(), p);
    }
    return out;
}

TiledStage::Statistics TiledStage::unpack(const Tensor &packed, const std::vector<int> &channels)
{
    Statistics out;
    const float *p = packed.data();
    for (int c : channels) {
        tiles::NormStatistics s;
        if (p) {
            s.mean.assign(p, p + c);
            s.invStd.assign(p + c, p + 2 * c);
            p += 2 * c;
        } else {
            s.mean.assign(std::size_t(c), 0.0f);
            s.invStd.assign(std::size_t(c), 1.0f);
        }
        out.push_back(std::move(s));
    }
    return out;
}

double TiledStage::stepCostFactor(const Shape &input) const
{
    const TileGeometry &g = geometry(input);
    const std::size_t n = m_layers.size();
    std::vector<Shape> full{input};
    for (const auto &l : m_layers)
        full.push_back(l.layer->outputShape(full.back()));
    std::vector<double> tiled(n + 1, 0.0); // prefix sums over the layers, all tiles
    double untiled = 0.0;
    for (std::size_t l = 0; l < n; ++l) {
        double sum = 0.0;
        for (const TileSteps &t : g.tiles())
            sum += m_layers[l].layer->forwardFlops(
                {input[0], full[l][1], t.rows[l].input.size(), t.cols[l].input.size()});
        tiled[l + 1] = tiled[l] + sum;
        untiled += m_layers[l].layer->forwardFlops(full[l]);
    }
    // A layer's backward counted as twice its forward, as the planner's profile does.
    const double all = tiled[n];
    double cost = 0.0;
    const auto tail = tailNorm();
    for (std::size_t l : normLayers()) {
        cost += tiled[l]; // its statistics
        if (l != tail)
            cost += all + 2.0 * (all - tiled[l + 1]); // its backward sums
    }
    cost += (tail ? 0.0 : all) + all + 2.0 * all; // output; the final backward pass
    return untiled > 0.0 ? cost / (3.0 * untiled) : 1.0;
}

Tensor TiledStage::forward(const Tensor &x, StageCache *cache, const PassContext &ctx)
{
    const TileGeometry &g = geometry(x.shape());
    // A team's ranks each write their cores; the sum of the ranks' outputs is the output.
    Tensor y = m_team ? Tensor::zeros(outputShape(x.shape()), MemoryCategory::Activations)
                      : Tensor(outputShape(x.shape()), MemoryCategory::Activations);
    Statistics stats;
    const std::optional<std::size_t> lastNorm = tailNorm();
    const bool tail = ctx.training && lastNorm.has_value();
    const std::size_t tailAt = lastNorm.value_or(0);
    if (ctx.training) {
        std::vector<tiles::ChannelMoments> moments;
        stats = gatherStatistics(x, g, ctx, moments, tail ? &y : nullptr);
        // Only a step's first forward moves the running statistics, as BatchNorm2d does.
        if (!ctx.recompute && !x.isVirtual()) {
            std::size_t j = 0;
            for (std::size_t l : normLayers()) {
                const auto var = moments[j].variance();
                m_layers[l].norm->trackStatistics(moments[j].mean.data(), var.data(),
                                                  moments[j].count);
                ++j;
            }
        }
    } else {
        stats = runningStatistics();
    }
    if (tail) { // y holds the last norm's input: normalise it (and the ReLU) in place
        if (m_team && !y.isVirtual())
            m_team->sumFloats(y.data(), std::size_t(y.numel()));
        auto params = m_layers[tailAt].norm->parameters();
        tiles::normalizeInto(y, y, stats.back(), params[0]->value.data(), params[1]->value.data(),
                             tailAt + 1 < m_layers.size());
    } else {
        for (const TileSteps *t : ownTiles(g))
            tiles::place(runTile(x, *t, m_layers.size(), stats, nullptr, 0, ctx), y,
                         {t->rows.back().output, t->cols.back().output});
        if (m_team && !y.isVirtual())
            m_team->sumFloats(y.data(), std::size_t(y.numel()));
    }
    // The output is kept too (the next stage holds it anyway): backward reads the last norm's
    // sums from it.
    if (cache)
        cache->tensors = {x, pack(stats), y};
    return y;
}

Tensor TiledStage::backTile(Tensor grad, const TileSteps &t, std::size_t stop,
                            const Statistics &stats, std::vector<LayerCache> &caches,
                            const std::vector<std::vector<double>> &meanDy,
                            const std::vector<std::vector<double>> &meanDyXhat,
                            const PassContext &ctx, bool needInputGrad,
                            std::vector<Tensor> *gradSums) const
{
    std::size_t norm = normLayers().size();
    for (std::size_t l = m_layers.size(); l-- > stop;) {
        const GroupLayer &gl = m_layers[l];
        if (gl.norm) {
            const Tensor &in = caches[l].tensors.at(0);
            --norm;
            auto params = gl.norm->parameters();
            if (!keepsAll(t.rows[l], t.cols[l], in.shape())) // zero where the tile only owns
                grad = tiles::padded(grad, in.shape(), keptOfOutput(t.rows[l], t.cols[l]));
            if (gradSums) {
                std::vector<double> dBeta(std::size_t(gl.norm->channels()), 0.0);
                std::vector<double> dGamma(dBeta.size(), 0.0);
                tiles::addGradientSums(grad, in, stats[norm], dBeta, dGamma);
                float *gamma = (*gradSums)[gl.firstParam].data();
                float *beta = (*gradSums)[gl.firstParam + 1].data();
                for (std::size_t c = 0; gamma && c < dBeta.size(); ++c) {
                    gamma[c] += float(dGamma[c]);
                    beta[c] += float(dBeta[c]);
                }
            }
            grad = tiles::normBackward(
                grad, in, stats[norm], params[0]->value.data(), meanDy[norm], meanDyXhat[norm],
                relative(t.rows[l], t.cols[l], t.rows[l].owned, t.cols[l].owned));
            continue;
        }
        const Shape outShape = gl.layer->outputShape(caches[l].inputShape);
        if (!keepsAll(t.rows[l], t.cols[l], outShape))
            grad = tiles::padded(grad, outShape, keptOfOutput(t.rows[l], t.cols[l]));
        grad = gl.layer->backward(grad, caches[l], ctx, l > 0 || needInputGrad);
        caches[l] = LayerCache();
        if (!gradSums)
            continue;
        std::size_t i = gl.firstParam;
        for (Parameter *p : gl.layer->parameters()) {
            Tensor &sum = (*gradSums)[i++];
            if (!sum.isVirtual())
                for (std::int64_t k = 0; k < sum.numel(); ++k)
                    sum.data()[k] += p->grad.data()[k];
        }
    }
    return grad;
}

Tensor TiledStage::backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                            bool needInputGrad)
{
    const Tensor &x = cache.tensors.at(0);
    const TileGeometry &g = geometry(x.shape());
    if (dy.shape() != outputShape(x.shape()))
        throw ShapeError("tile group: gradient " + dy.shape().toString() + " against output " +
                         outputShape(x.shape()).toString());
    const Statistics stats =
        ctx.training ? unpack(cache.tensors.at(1), normChannels()) : runningStatistics();
    const auto norms = normLayers();
    const auto core = [](const TileSteps &t) -> tiles::Window {
        return {t.rows.back().output, t.cols.back().output};
    };
    // The whole map's mean(dy) and mean(dy xhat) per batch norm, from the last one back: each
    // needs the gradient that reaches it, which passes through the later ones.
    std::vector<std::vector<double>> meanDy(norms.size()), meanDyXhat(norms.size());
    for (std::size_t j = norms.size(); j-- > 0;) {
        const std::size_t l = norms[j];
        const auto C = std::size_t(m_layers[l].norm->channels());
        meanDy[j].assign(C, 0.0);
        meanDyXhat[j].assign(C, 0.0);
        if (!ctx.training)
            continue;
        auto params = m_layers[l].norm->parameters();
        const float *gamma = params[0]->value.data(), *beta = params[1]->value.data();
        // From the output, x-hat = (y - beta) / gamma loses the digits beta has beyond gamma:
        // only where |beta| stays within 64 |gamma| (64 float roundings: under 1e-5 relative).
        bool fromOutput = tailNorm() == l && !x.isVirtual();
        for (std::size_t c = 0; fromOutput && c < C; ++c)
            fromOutput = gamma[c] != 0.0f && std::abs(beta[c]) <= 64.0f * std::abs(gamma[c]);
        if (fromOutput) {
            tiles::addTailGradientSums(dy, cache.tensors.at(2), gamma, beta, meanDy[j],
                                       meanDyXhat[j]);
        } else {
            for (const TileSteps *own : ownTiles(g)) {
                const TileSteps &t = *own;
                std::vector<LayerCache> caches(m_layers.size());
                runTile(x, t, m_layers.size(), stats, &caches, l, ctx);
                const Tensor grad =
                    backTile(tiles::crop(dy, core(t), MemoryCategory::Activations), t, l + 1, stats,
                             caches, meanDy, meanDyXhat, ctx, true, nullptr);
                const Tensor &in = caches[l].tensors.at(0);
                tiles::addGradientSums(
                    keepsAll(t.rows[l], t.cols[l], in.shape())
                        ? grad
                        : tiles::padded(grad, in.shape(), keptOfOutput(t.rows[l], t.cols[l])),
                    in, stats[j], meanDy[j], meanDyXhat[j]);
            }
            if (m_team && !x.isVirtual()) {
                std::vector<double> v(meanDy[j]);
                v.insert(v.end(), meanDyXhat[j].begin(), meanDyXhat[j].end());
                m_team->sumDoubles(v.data(), v.size());
                std::copy(v.begin(), v.begin() + std::ptrdiff_t(C), meanDy[j].begin());
                std::copy(v.begin() + std::ptrdiff_t(C), v.end(), meanDyXhat[j].begin());
            }
        }
        const double count = double(x.dim(0)) * double(g.height(l)) * double(g.width(l));
        for (std::size_t c = 0; c < C; ++c) {
            meanDy[j][c] /= count;
            meanDyXhat[j][c] /= count;
        }
    }
    std::vector<Tensor> sums;
    for (const auto &gl : m_layers)
        for (Parameter *p : gl.layer->parameters())
            sums.push_back(Tensor::zeros(p->grad.shape(), MemoryCategory::Gradients));
    Tensor dx = needInputGrad ? Tensor::zeros(x.shape(), MemoryCategory::Activations) : Tensor();
    for (const TileSteps *own : ownTiles(g)) {
        const TileSteps &t = *own;
        std::vector<LayerCache> caches(m_layers.size());
        runTile(x, t, m_layers.size(), stats, &caches, 0, ctx);
        const Tensor grad = backTile(tiles::crop(dy, core(t), MemoryCategory::Activations), t, 0,
                                     stats, caches, meanDy, meanDyXhat, ctx, needInputGrad, &sums);
        if (needInputGrad)
            tiles::addInto(grad, dx, {t.rows.front().input, t.cols.front().input});
    }
    std::size_t i = 0;
    for (const auto &gl : m_layers)
        for (Parameter *p : gl.layer->parameters())
            if (!sums[i].isVirtual() && !p->grad.isVirtual())
                p->grad.copyFrom(sums[i++]);
            else
                ++i;
    return dx;
}

} // namespace edgetrain::core
