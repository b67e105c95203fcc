#include "tilegeometry.h"

#include "error.h"

#include <algorithm>

namespace edgetrain::core {

Span splitSpan(std::int64_t size, int index, int parts)
{
    return {size * index / parts, size * (index + 1) / parts};
}

std::int64_t windowOutputSize(const AxisWindow &w, std::int64_t input)
{
    const std::int64_t reach = std::int64_t(w.dilation) * (w.kernel - 1) + 1;
    const std::int64_t padded = input + 2 * std::int64_t(w.padding);
    return padded < reach ? 0 : (padded - reach) / w.stride + 1;
}

TileGeometry::TileGeometry(std::vector<TileLayerWindow> layers, std::int64_t height,
                           std::int64_t width, int gridRows, int gridCols)
    : m_layers(std::move(layers)), m_gridRows(gridRows), m_gridCols(gridCols)
{
    if (gridRows < 1 || gridCols < 1)
        throw SpecError("a tile grid needs at least one row and one column");
    m_heights = {height};
    m_widths = {width};
    for (const auto &layer : m_layers) {
        m_heights.push_back(windowOutputSize(layer.rows, m_heights.back()));
        m_widths.push_back(windowOutputSize(layer.cols, m_widths.back()));
        if (m_heights.back() < 1 || m_widths.back() < 1)
            throw SpecError("the tile group's input of " + std::to_string(height) + "x" +
                            std::to_string(width) + " is too small for its layers");
    }
    if (gridRows > m_heights.back() || gridCols > m_widths.back())
        throw SpecError("a grid of " + std::to_string(gridRows) + "x" + std::to_string(gridCols) +
                        " tiles does not fit the group's output of " +
                        std::to_string(m_heights.back()) + "x" + std::to_string(m_widths.back()));
    for (int r = 0; r < gridRows; ++r)
        for (int c = 0; c < gridCols; ++c)
            m_tiles.push_back({r, c, axisSteps(true, m_heights, r, gridRows),
                               axisSteps(false, m_widths, c, gridCols)});
}

std::vector<TileAxisStep> TileGeometry::axisSteps(bool rows, const std::vector<std::int64_t> &sizes,
                                                  int index, int parts) const
{
    const std::size_t n = m_layers.size();
    std::vector<TileAxisStep> steps(n);
    // Walk back from the core: what each layer must produce is what the next one reads.
    Span need = splitSpan(sizes[n], index, parts);
    for (std::size_t l = n; l-- > 0;) {
        const AxisWindow &w = rows ? m_layers[l].rows : m_layers[l].cols;
        TileAxisStep &step = steps[l];
        step.output = need;
        if (m_layers[l].batchNorm) {
            // The tile normalises with the whole map's statistics and gathers its owned part's:
            // it computes the norm's input over both, and keeps what the next layer reads.
            step.owned = splitSpan(sizes[l + 1], index, parts);
            need = {std::min(need.begin, step.owned.begin), std::max(need.end, step.owned.end)};
            step.input = need;
            step.outputOrigin = need.begin;
            continue;
        }
        if (w.positionwise()) {
            step.input = need;
            step.outputOrigin = need.begin;
            continue;
        }
        const std::int64_t reach = std::int64_t(w.dilation) * (w.kernel - 1);
        const std::int64_t first = std::int64_t(w.stride) * need.begin - w.padding;
        const std::int64_t last = std::int64_t(w.stride) * (need.end - 1) - w.padding + reach;
        // Output j of a crop starting at b is output j + b / stride of the map when b is a
        // multiple of the stride: round the start down to one.
        const std::int64_t begin = std::max<std::int64_t>(0, first) / w.stride * w.stride;
        step.input = {begin, std::min(sizes[l], last + 1)};
        step.outputOrigin = begin / w.stride;
        need = step.input;
    }
    return steps;
}

double TileGeometry::inputOverlap() const
{
    double area = 0.0;
    for (const auto &t : m_tiles)
        area += double(t.rows.front().input.size()) * double(t.cols.front().input.size());
    return area / (double(m_heights.front()) * double(m_widths.front()));
}

} // namespace edgetrain::core
