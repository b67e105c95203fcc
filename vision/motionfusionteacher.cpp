#include "motionfusionteacher.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edgetrain::vision {

MotionFusionTeacher::MotionFusionTeacher(std::unique_ptr<Teacher> detector,
                                         std::unique_ptr<MotionTeacher> motion)
    : m_detector(std::move(detector)), m_motion(std::move(motion))
{}

MotionFusionTeacher::~MotionFusionTeacher() = default;

void MotionFusionTeacher::observe(const cv::Mat &bgr)
{
    m_motion->observe(bgr);
}

namespace {

using Blob = MotionTeacher::Blob;

/** Hits of one object: their horizontal extent and centre, and the best-scored of them. */
struct Group
{
    double x0 = 0, x1 = 0;
    std::size_t best = 0;
    double centre() const { return 0.5 * (x0 + x1); }
};

double fillOf(const Blob &b)
{
    return b.area_px / std::max(b.box.area(), 1.0);
}

/** The foreground pixels of each column of `mask` (0/255). */
cv::Mat columnSums(const cv::Mat &mask)
{
    cv::Mat columns;
    cv::reduce(mask / 255, columns, 0, cv::REDUCE_SUM, CV_32S);
    return columns;
}

} // namespace

double MotionFusionTeacher::typicalWidthShare() const
{
    if (int(m_width_shares.size()) < rules.typical_after)
        return 0.0;
    std::vector<double> v = m_width_shares;
    const auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

/** One frame's fusion: which hits lie in which blobs, and the rules of the class comment applied
 *  to them in turn. Updates the teacher's counts and its memory of the scene's objects. */
class MotionFusionTeacher::Frame
{
public:
    Frame(MotionFusionTeacher &teacher, std::vector<Detection> frameHits,
          std::vector<Blob> frameBlobs)
        : t(teacher), rules(teacher.rules), hits(std::move(frameHits)),
          blobs(std::move(frameBlobs)), labels(teacher.m_motion->labels()),
          s(teacher.m_motion->processingScale()), share(teacher.typicalWidthShare()),
          hitsOf(this->blobs.size()), blobsOf(this->hits.size()),
          blobDone(this->blobs.size(), false), keptAlone(this->hits.size(), false)
    {
        associate();
    }

    std::vector<Detection> fuse()
    {
        joinComeApart();
        for (std::size_t b = 0; b < blobs.size(); ++b)
            if (!blobDone[b] && !hitsOf[b].empty())
                fuseBlobWithHits(b);
        keepLoneHits();
        keepPlausibleBlobs();
        return std::move(out);
    }

private:
    /** A hit and a blob belong together when they overlap enough of the smaller one. */
    void associate()
    {
        for (std::size_t b = 0; b < blobs.size(); ++b)
            for (std::size_t h = 0; h < hits.size(); ++h) {
                const double inter = (blobs[b].box & hits[h].box).area();
                if (inter > 0 &&
                    inter >= rules.associate * std::min(blobs[b].box.area(), hits[h].box.area())) {
                    hitsOf[b].push_back(h);
                    blobsOf[h].push_back(b);
                }
            }
    }

    /** The blob's pixels (at the model's scale) within its box. */
    cv::Mat blobMask(const Blob &b, cv::Rect *roi) const
    {
        *roi = cv::Rect(cvRound(b.box.x * s), cvRound(b.box.y * s), cvRound(b.box.width * s),
                        cvRound(b.box.height * s)) &
               cv::Rect(0, 0, labels.cols, labels.rows);
        cv::Mat mask = labels(*roi) == b.label;
        return mask;
    }

    /** The extent of the blob's pixels in the columns [x0, x1) (frame pixels); empty if none. */
    cv::Rect2d extentIn(const Blob &b, double x0, double x1) const
    {
        cv::Rect roi;
        const cv::Mat mask = blobMask(b, &roi);
        const int c0 = std::clamp(int(std::floor(x0 * s)) - roi.x, 0, roi.width);
        const int c1 = std::clamp(int(std::ceil(x1 * s)) - roi.x, 0, roi.width);
        if (c1 <= c0)
            return cv::Rect2d();
        const cv::Rect r = cv::boundingRect(mask.colRange(c0, c1));
        if (r.area() <= 0)
            return cv::Rect2d();
        return cv::Rect2d((roi.x + c0 + r.x) / s, (roi.y + r.y) / s, r.width / s, r.height / s);
    }

    void confirm(const cv::Rect2d &box, double fill)
    {
        if (box.width <= 0 || box.height <= 0)
            return;
        out.push_back({box, float(0.6 + 0.4 * std::clamp(fill, 0.0, 1.0)), 0});
        ++t.m_counts.confirmed;
        const double aspect = box.height / box.width;
        if (aspect >= rules.min_aspect && aspect <= rules.max_aspect) {
            t.m_lowest_px = t.m_lowest_px > 0 ? std::min(t.m_lowest_px, box.height) : box.height;
            t.m_highest_px = std::max(t.m_highest_px, box.height);
        }
    }

    /** A single object confirmed: its width/height joins the scene's last 400. */
    void rememberSingle(const cv::Rect2d &box)
    {
        const double aspect = box.height / std::max(box.width, 1e-9);
        if (aspect < rules.min_aspect || aspect > rules.max_aspect)
            return;
        const std::size_t keep = 400;
        if (t.m_width_shares.size() < keep)
            t.m_width_shares.push_back(box.width / box.height);
        else
            t.m_width_shares[t.m_next_share++ % keep] = box.width / box.height;
    }

    /** Shaped like the objects confirmed so far. */
    bool plausible(const cv::Rect2d &r) const
    {
        const double aspect = r.height / std::max(r.width, 1e-9);
        return t.m_highest_px > 0 && aspect >= rules.min_aspect && aspect <= rules.max_aspect &&
               r.height >= rules.height_low * t.m_lowest_px &&
               r.height <= rules.height_high * t.m_highest_px;
    }

    /** People walking together in one blob: the blob cut at the valleys of its columns'
     *  foreground into as many parts as the scene's typical width says; none if it is not that. */
    std::vector<cv::Rect2d> mergedParts(const Blob &blob) const
    {
        const double typical = share * blob.box.height;
        if (share <= 0 || blob.box.width < rules.merged_width * typical)
            return {};
        const int k = std::max(2, int(std::lround(blob.box.width / typical)));
        cv::Rect roi;
        const cv::Mat mask = blobMask(blob, &roi);
        if (mask.cols < 2 * k)
            return {};
        const cv::Mat columns = columnSums(mask);
        const int n = columns.cols;
        auto at = [&](int c) { return columns.at<int>(0, c); };
        std::vector<int> cuts{0};
        const int radius = std::max(1, int(n / (3.0 * k)));
        for (int i = 1; i < k; ++i) {
            const int nominal = i * n / k;
            int best = -1;
            for (int c = std::max(cuts.back() + 1, nominal - radius);
                 c <= std::min(n - 1, nominal + radius); ++c)
                if (best < 0 || at(c) < at(best) ||
                    (at(c) == at(best) && std::abs(c - nominal) < std::abs(best - nominal)))
                    best = c;
            if (best < 0)
                return {};
            cuts.push_back(best);
        }
        cuts.push_back(n);
        auto peak = [&](int from, int to) {
            int p = 0;
            for (int c = from; c < to; ++c)
                p = std::max(p, at(c));
            return p;
        };
        for (std::size_t i = 1; i + 1 < cuts.size(); ++i)
            if (at(cuts[i]) >
                rules.valley * std::min(peak(cuts[i - 1], cuts[i]), peak(cuts[i] + 1, cuts[i + 1])))
                return {};
        std::vector<cv::Rect2d> parts;
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
            const cv::Rect2d part =
                extentIn(blob, (roi.x + cuts[i]) / s, (roi.x + cuts[i + 1]) / s);
            if (!plausible(part))
                return {};
            parts.push_back(part);
        }
        return parts;
    }

    /** One hit over several blobs that no other hit claims: one object come apart. */
    void joinComeApart()
    {
        for (std::size_t h = 0; h < hits.size(); ++h) {
            if (blobsOf[h].size() < 2 ||
                !std::all_of(blobsOf[h].begin(), blobsOf[h].end(),
                             [&](std::size_t b) { return hitsOf[b].size() == 1 && !blobDone[b]; }))
                continue;
            cv::Rect2d u = blobs[blobsOf[h].front()].box;
            double area = 0;
            for (std::size_t b : blobsOf[h]) {
                u |= blobs[b].box;
                area += blobs[b].area_px;
                blobDone[b] = true;
            }
            confirm(u, area / std::max(u.area(), 1.0));
        }
    }

    /** The blob's hits left to right, those on top of each other as one group. */
    std::vector<Group> groupsOf(std::size_t b) const
    {
        std::vector<std::size_t> order = hitsOf[b];
        std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
            return hits[x].box.x + hits[x].box.width / 2 < hits[y].box.x + hits[y].box.width / 2;
        });
        std::vector<Group> groups;
        for (std::size_t h : order) {
            const cv::Rect2d &r = hits[h].box;
            if (!groups.empty()) {
                Group &g = groups.back();
                const double overlap = std::min(g.x1, r.x + r.width) - std::max(g.x0, r.x);
                if (overlap >= rules.side_by_side * std::min(g.x1 - g.x0, r.width)) {
                    g.x0 = std::min(g.x0, r.x);
                    g.x1 = std::max(g.x1, r.x + r.width);
                    if (hits[h].score > hits[g.best].score)
                        g.best = h;
                    continue;
                }
            }
            groups.push_back({r.x, r.x + r.width, h});
        }
        return groups;
    }

    /** An object whose hit is centred beside the blob is not in it: splitting the blob at a
     *  column between the two centres would cut a sliver off its edge (a 1 px wide box at a
     *  5 frames/s camera's walker). Unless another blob holds it, it keeps its hit's box. */
    void dropGroupsBeside(const Blob &blob, std::vector<Group> &groups)
    {
        auto centredIn = [](const Group &g, const cv::Rect2d &box) {
            return g.centre() >= box.x && g.centre() <= box.x + box.width;
        };
        std::erase_if(groups, [&](const Group &g) {
            if (centredIn(g, blob.box))
                return false;
            const auto &others = blobsOf[g.best];
            if (!keptAlone[g.best] &&
                std::none_of(others.begin(), others.end(),
                             [&](std::size_t o) { return centredIn(g, blobs[o].box); })) {
                keptAlone[g.best] = true;
                out.push_back({hits[g.best].box, 0.5f, hits[g.best].label});
                ++t.m_counts.detector_only;
            }
            return true;
        });
    }

    /** Objects side by side in one blob: cut at the column with the least foreground between
     *  each two centres (of equals, the one nearest the middle of the gap between the hits). */
    void splitAtGaps(const Blob &blob, const std::vector<Group> &groups)
    {
        cv::Rect roi;
        const cv::Mat columns = columnSums(blobMask(blob, &roi));
        std::vector<double> cuts{blob.box.x};
        for (std::size_t i = 0; i + 1 < groups.size(); ++i) {
            const double gapMiddle = 0.5 * (groups[i].x1 + groups[i + 1].x0);
            const int from = std::clamp(int(groups[i].centre() * s) - roi.x, 0, roi.width - 1);
            const int to = std::clamp(int(groups[i + 1].centre() * s) - roi.x, 0, roi.width - 1);
            int best = from;
            for (int c = from; c <= to; ++c) {
                const int v = columns.at<int>(0, c), bv = columns.at<int>(0, best);
                if (v < bv || (v == bv && std::abs((roi.x + c) / s - gapMiddle) <
                                              std::abs((roi.x + best) / s - gapMiddle)))
                    best = c;
            }
            cuts.push_back((roi.x + best) / s);
        }
        cuts.push_back(blob.box.x + blob.box.width);
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
            const cv::Rect2d part = extentIn(blob, cuts[i], cuts[i + 1]);
            if (part.area() <= 0)
                continue;
            confirm(part, fillOf(blob));
            ++t.m_counts.split_parts;
        }
    }

    /** A blob with hits: confirmed, split between objects side by side, or cut to the hit. */
    void fuseBlobWithHits(std::size_t b)
    {
        blobDone[b] = true;
        const Blob &blob = blobs[b];
        std::vector<Group> groups = groupsOf(b);
        dropGroupsBeside(blob, groups);
        if (groups.empty())
            return; // its hits' objects lie beside it: the blob is theirs, no second box
        if (groups.size() >= 2) {
            splitAtGaps(blob, groups);
        } else if (blob.box.width > rules.wide_blob * (groups[0].x1 - groups[0].x0)) {
            confirm(extentIn(blob, groups[0].x0, groups[0].x1), fillOf(blob));
        } else if (const std::vector<cv::Rect2d> parts = mergedParts(blob); !parts.empty()) {
            for (const cv::Rect2d &part : parts)
                confirm(part, fillOf(blob));
            t.m_counts.merged_parts += int(parts.size());
        } else {
            confirm(blob.box, fillOf(blob));
            rememberSingle(blob.box);
        }
    }

    /** A hit with no blob: the object stands still (or motion missed it). */
    void keepLoneHits()
    {
        for (std::size_t h = 0; h < hits.size(); ++h)
            if (blobsOf[h].empty()) {
                out.push_back({hits[h].box, 0.5f, hits[h].label});
                ++t.m_counts.detector_only;
            }
    }

    /** A blob with no hit: kept when it is shaped like the objects confirmed so far. */
    void keepPlausibleBlobs()
    {
        for (std::size_t b = 0; b < blobs.size(); ++b) {
            if (blobDone[b])
                continue;
            const float score = float(0.5 * std::min(1.0, fillOf(blobs[b])));
            const std::vector<cv::Rect2d> parts = mergedParts(blobs[b]);
            if (!parts.empty()) {
                for (const cv::Rect2d &part : parts)
                    out.push_back({part, score, 0});
                t.m_counts.merged_parts += int(parts.size());
                ++t.m_counts.motion_only;
            } else if (plausible(blobs[b].box)) {
                out.push_back({blobs[b].box, score, 0});
                ++t.m_counts.motion_only;
            } else {
                ++t.m_counts.dropped_blobs;
            }
        }
    }

    MotionFusionTeacher &t;
    const FusionRules &rules;
    const std::vector<Detection> hits;
    const std::vector<Blob> blobs;
    const cv::Mat &labels;
    const double s;     // the motion model's processing scale
    const double share; // the scene's typical width/height (0: not yet known)
    std::vector<std::vector<std::size_t>> hitsOf, blobsOf;
    std::vector<bool> blobDone;
    std::vector<bool> keptAlone; // a hit beside its blobs, kept as its own box once
    std::vector<Detection> out;
};

std::vector<Detection> MotionFusionTeacher::detect(const cv::Mat &bgr)
{
    m_detector->threshold = threshold;
    std::vector<Detection> hits = m_detector->detect(bgr);
    (void)m_motion->detect(bgr);
    const bool warm = m_motion->framesSeen() > m_motion->options().warmup_frames;
    std::vector<Blob> blobs = warm ? m_motion->blobs() : std::vector<Blob>{};
    m_counts = {};
    m_counts.hits = int(hits.size());
    m_counts.blobs = int(blobs.size());
    std::vector<Detection> out = Frame(*this, std::move(hits), std::move(blobs)).fuse();
    return corrected(std::move(out), bgr.size());
}

} // namespace edgetrain::vision
