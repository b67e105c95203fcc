#pragma once

#include "stage.h"
#include "tilegeometry.h"
#include "tilekernels.h"

#include <memory>
#include <optional>
#include <vector>

namespace edgetrain::core {

class BatchNorm2d;

/**
 * A fused tile group (the fourth paper's method on one device): the first stages of a chain run
 * tile by tile on an N x M grid, each tile from exactly the input its receptive field needs, so
 * that no full-size activation of the group is kept — forward keeps only the group's input, and
 * backward recomputes one tile at a time, accumulating the weight gradients over the tiles. The
 * output and every gradient equal the untiled stages' (within float rounding).
 *
 * Batch norms normalise with the whole map's statistics, not a tile's: in training the group
 * runs one pass over the tiles per batch norm to sum its statistics (each tile over the part of
 * the map it owns, merged exactly in double), and in backward one pass per batch norm to sum
 * mean(dy) and mean(dy xhat) before the pass that writes the gradients. Two passes rather than a
 * sync inside one: on one device the tiles run one after another, so a tile cannot wait for the
 * sums of tiles not yet run; across devices the same sums are what the devices exchange. The
 * price is recomputation, one pass per batch norm, which is why a group should end early.
 *
 * Takes sequential stages of conv2d, batchnorm2d, relu, maxpool2d and avgpool2d; throws
 * SpecError naming the first stage or layer it cannot tile.
 */
class TiledStage : public Stage
{
public:
    /**
     * Devices that split one group's tiles (the paper's across-device method): rank r computes
     * the tiles whose index is r modulo size, of every image it is given, and the team sums
     * what the tiles' results need from the others — batch-norm moments and backward sums
     * (doubles), the group's output (floats, each rank writing its cores into zeros). Every
     * rank gets the whole output; backward needs the whole output gradient on every rank, and
     * leaves in the parameters' gradients this rank's tiles' share (the team's sum is the
     * untiled gradient).
     */
    struct TileTeam
    {
        int rank = 0;
        int size = 1;
        std::function<void(double *, std::size_t)> sumDoubles;
        std::function<void(float *, std::size_t)> sumFloats;
    };

    TiledStage(std::vector<std::unique_ptr<Stage>> stages, int gridRows, int gridCols);

    std::string_view type() const override { return "tiled"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, StageCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    void forEachLayer(const std::function<void(const std::string &, Layer &)> &fn) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

    int gridRows() const { return m_gridRows; }
    int gridCols() const { return m_gridCols; }
    std::size_t stageCount() const { return m_stages.size(); }
    /** Splits the tiles over a team (none: this device runs them all). */
    void setTeam(std::optional<TileTeam> team) { m_team = std::move(team); }
    const std::optional<TileTeam> &team() const { return m_team; }
    /** The stages it tiles, given back (the group is empty afterwards). */
    std::vector<std::unique_ptr<Stage>> release() { return std::move(m_stages); }
    /** The tile geometry for an input batch shape. */
    const TileGeometry &geometry(const Shape &input) const;
    /** Layer forward FLOPs of one training step of the group (forward + backward, with the
     *  passes over the tiles and their halos) against the untiled step's: what tiling costs. */
    double stepCostFactor(const Shape &input) const;

    /** Whether `stage` can be part of a tile group; empty: it can, else why not. */
    static std::string refusal(Stage &stage);

private:
    struct GroupLayer
    {
        Layer *layer = nullptr;
        BatchNorm2d *norm = nullptr; // the layer, when it is a batch norm
        TileLayerWindow window;
        std::size_t firstParam = 0; // index of its first parameter among the group's
        bool relu = false;
    };
    using Statistics = std::vector<tiles::NormStatistics>; // by batch norm, in layer order
    /** A tile's pass, layer by layer, from the group's input up to layer `end` (exclusive). */
    struct TilePass;

    std::vector<std::size_t> normLayers() const;
    /** The tiles this device computes: all, or its team rank's. */
    std::vector<const TileSteps *> ownTiles(const TileGeometry &g) const;
    /** The team's moments of one norm from this rank's (two sums over the team). */
    void teamMoments(tiles::ChannelMoments &m, const BatchNorm2d &norm) const;
    /** The whole map's statistics of every batch norm, one pass over the tiles each. */
    Statistics gatherStatistics(const Tensor &x, const TileGeometry &g, const PassContext &ctx,
                                std::vector<tiles::ChannelMoments> &moments, Tensor *y) const;
    /** The last batch norm, when only ReLUs follow it: its map is the output's, so forward
     *  writes its input straight to the output and backward reads its sums from the output. */
    std::optional<std::size_t> tailNorm() const;
    Statistics runningStatistics() const;
    Tensor runTile(const Tensor &x, const TileSteps &t, std::size_t end, const Statistics &stats,
                   std::vector<LayerCache> *caches, std::size_t cacheFrom,
                   const PassContext &ctx) const;
    /** Back through one tile from its core's gradient to the input of layer `stop`. */
    Tensor backTile(Tensor grad, const TileSteps &t, std::size_t stop, const Statistics &stats,
                    std::vector<LayerCache> &caches, const std::vector<std::vector<double>> &meanDy,
                    const std::vector<std::vector<double>> &meanDyXhat, const PassContext &ctx,
                    bool needInputGrad, std::vector<Tensor> *gradSums) const;
    static Statistics unpack(const Tensor &packed, const std::vector<int> &channels);
    Tensor pack(const Statistics &stats) const;
    std::vector<int> normChannels() const;

    std::vector<std::unique_ptr<Stage>> m_stages;
    std::vector<GroupLayer> m_layers;
    int m_gridRows, m_gridCols;
    mutable std::optional<std::pair<Shape, TileGeometry>> m_geometry;
    std::optional<TileTeam> m_team;
};

} // namespace edgetrain::core
