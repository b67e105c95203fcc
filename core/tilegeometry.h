#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgetrain::core {

/** A half-open range of rows (or columns) [begin, end) of a feature map. */
struct Span
{
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::int64_t size() const { return end - begin; }
    bool operator==(const Span &) const = default;
};

/** How a layer maps positions along one axis: a window of `kernel` taps `dilation` apart, moved
 *  by `stride`, over an input padded by `padding` (1, 1, 0, 1: a position-wise layer). */
struct AxisWindow
{
    int kernel = 1;
    int stride = 1;
    int padding = 0;
    int dilation = 1;
    bool positionwise() const { return kernel == 1 && stride == 1 && padding == 0; }
};

/** A layer of a tile group as the geometry sees it: its window on both axes, and whether it is
 *  a batch norm (whose statistics each tile gathers over the part of the map it owns). */
struct TileLayerWindow
{
    AxisWindow rows;
    AxisWindow cols;
    bool batchNorm = false;
};

/**
 * Where one layer of one tile reads and writes, on one axis. The layer runs on `input` (its own
 * padding applies, so `input.begin` is a multiple of its stride and output j of the crop is
 * output `outputOrigin + j` of the whole map); the tile keeps `output` of what it produces,
 * which is the next layer's `input`. Positions of the crop's output outside `output` may be wrong
 * (the layer padded where the map goes on); they are cut away and never reach a kept value.
 * At a batch norm, `owned` is the part of the map whose statistics this tile gathers: the owned
 * parts of all tiles partition the map, and the norm's `input` covers both `owned` and `output`.
 */
struct TileAxisStep
{
    Span input;
    std::int64_t outputOrigin = 0;
    Span output;
    Span owned;
};

/** One tile of an N x M grid: its place in the grid, and per layer its steps on both axes. */
struct TileSteps
{
    int row = 0;
    int col = 0;
    std::vector<TileAxisStep> rows; // by layer
    std::vector<TileAxisStep> cols;
};

/**
 * The halo arithmetic of a fused tile group: for a chain of layers and an input of H x W, the
 * rows and columns every layer of every tile of an N x M grid reads, from the kernels, strides,
 * padding and dilation, so that the kept part of each tile's output equals the untiled result.
 * The group's output is split into N x M near-equal cores; each tile computes its core from
 * exactly the input its receptive field needs (rounded out to a stride where a layer needs its
 * crop aligned), and at batch norms it also computes the part of the map it owns.
 */
class TileGeometry
{
public:
    /** Throws SpecError if the grid has more rows or columns than the group's output. */
    TileGeometry(std::vector<TileLayerWindow> layers, std::int64_t height, std::int64_t width,
                 int gridRows, int gridCols);

    int gridRows() const { return m_gridRows; }
    int gridCols() const { return m_gridCols; }
    const std::vector<TileSteps> &tiles() const { return m_tiles; }
    /** The map's height / width at the input of layer l (l = layers: the group's output). */
    std::int64_t height(std::size_t l) const { return m_heights.at(l); }
    std::int64_t width(std::size_t l) const { return m_widths.at(l); }
    std::size_t layerCount() const { return m_layers.size(); }

    /** Rows (or columns) a tile of the grid computes at the group's input, summed over the
     *  grid, against the map's: 1 without halos. */
    double inputOverlap() const;

private:
    /** The steps of part `index` of `parts` along one axis with per-layer sizes `sizes`. */
    std::vector<TileAxisStep> axisSteps(bool rows, const std::vector<std::int64_t> &sizes,
                                        int index, int parts) const;

    std::vector<TileLayerWindow> m_layers;
    std::vector<std::int64_t> m_heights, m_widths;
    int m_gridRows, m_gridCols;
    std::vector<TileSteps> m_tiles;
};

/** Part `index` of `parts` near-equal parts of [0, size). */
Span splitSpan(std::int64_t size, int index, int parts);

/** Output size of a window along an axis (floor mode); < 1 when the input is too small. */
std::int64_t windowOutputSize(const AxisWindow &w, std::int64_t input);

} // namespace edgetrain::core
