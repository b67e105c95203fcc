#pragma once

#include "motionteacher.h"
#include "teacher.h"

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::vision {

/** The thresholds of MotionFusionTeacher's rules, for a person-shaped category. */
struct FusionRules
{
    /** A hit and a blob belong together when their intersection is at least this share of the
     *  smaller of the two (a blob of one leg inside a hit; a hit inside a blob of two people). */
    double associate = 0.5;
    /** Two hits in one blob are side by side (two objects) when their horizontal overlap is
     *  less than this share of the narrower one; otherwise they are one object seen twice. */
    double side_by_side = 0.5;
    /** A blob more than this times as wide as its single hit is cut to the hit's columns. */
    double wide_blob = 1.6;
    /** An unconfirmed blob is kept when height/width is in [min_aspect, max_aspect] ... */
    double min_aspect = 1.5, max_aspect = 5.0;
    /** ... and its height in [height_low * lowest, height_high * highest] confirmed height. */
    double height_low = 0.6, height_high = 1.6;
    /** A blob with at most one hit, at least this many times as wide as the scene's typical
     *  object of its height (the median width/height of the single objects confirmed so far),
     *  is people walking together: it is cut into round(width / typical width) parts, each at
     *  the column of least foreground near its even share ... */
    double merged_width = 1.4;
    /** ... provided each such column is a valley: its foreground at most this share of the
     *  lower of the two neighbouring parts' fullest columns (one person with legs apart has its
     *  body's columns full between them). */
    double valley = 0.85;
    /** Single objects confirmed before the typical width is trusted. */
    int typical_after = 20;
};

/**
 * A detector and motion together, for a fixed camera ("hog+motion", "cascade:FILE+motion"):
 * motion gives the extent, the detector gives the objecthood. Per frame given to detect():
 *  - the detector runs (its boxes already corrected by its BoxConvention) and the motion model
 *    takes the frame;
 *  - a blob with one hit (or hits on top of each other) is confirmed: its box is the blob's
 *    extent; if the blob is much wider than the hit (FusionRules::wide_blob: people walking
 *    together, the detector saw one), it is cut to the foreground in the hit's columns;
 *  - a blob with hits side by side is split at the gap between them (the column with the least
 *    foreground between two hits' centres); each part is the foreground's extent in its columns;
 *    a hit centred beside the blob takes no part in it (a split there cut a 1 px sliver off the
 *    blob's edge): unless another blob holds its centre it is kept as the detector's box, once;
 *  - one hit over several blobs, each with no other hit (a person whose legs and body came apart)
 *    gives one confirmed box, their union;
 *  - a hit with no blob (a person who stopped and became background) is kept as the detector's
 *    box;
 *  - a blob with no hit is kept only if its shape is plausible for a person: height/width in
 *    [1.5, 5] and height within [0.6 x the lowest, 1.6 x the highest] confirmed height seen so
 *    far (confirmed boxes of plausible aspect); before the first confirmation none is kept.
 *    A blob lying mostly inside a kept detector box is not kept again;
 *  - a blob with one hit or none that is FusionRules::merged_width times as wide as this scene's
 *    single objects of its height, with a clear valley in its columns' foreground where the
 *    objects meet, is people walking together the detector saw as one or not at all: it is cut
 *    at the valleys, each part the foreground's extent in its columns (a part kept without a hit
 *    must be plausible as above).
 * Scores in [0, 1]: confirmed 0.6 + 0.4 x blob fill, detector only 0.5, motion only 0.5 x
 * fill. `threshold` is handed to the detector (its own score scale). Frames the caller does not
 * want boxes for go to observe(), which feeds the motion model only. Identity over frames is not
 * its business (the Labeler's tracks).
 */
class MotionFusionTeacher : public Teacher
{
public:
    /** How the boxes of the last detect() came about. */
    struct Counts
    {
        int hits = 0, blobs = 0;
        int confirmed = 0, split_parts = 0, detector_only = 0, motion_only = 0, dropped_blobs = 0;
        int merged_parts = 0;
    };

    MotionFusionTeacher(std::unique_ptr<Teacher> detector, std::unique_ptr<MotionTeacher> motion);
    ~MotionFusionTeacher() override;
    std::string name() const override { return m_detector->name() + "+motion"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    void observe(const cv::Mat &bgr) override;
    bool needsEveryFrame() const override { return true; }

    FusionRules rules;
    const Counts &lastCounts() const { return m_counts; }
    /** Lowest and highest confirmed height so far (0, 0 before the first). */
    double lowestConfirmed_px() const { return m_lowest_px; }
    double highestConfirmed_px() const { return m_highest_px; }
    /** The median width/height of the single objects confirmed so far; 0 until
     *  FusionRules::typical_after of them. */
    double typicalWidthShare() const;
    Teacher &detector() { return *m_detector; }
    MotionTeacher &motion() { return *m_motion; }

private:
    class Frame; // one detect(): the frame's hits and blobs and the rules applied to them

    std::unique_ptr<Teacher> m_detector;
    std::unique_ptr<MotionTeacher> m_motion;
    Counts m_counts;
    double m_lowest_px = 0.0, m_highest_px = 0.0;
    std::vector<double> m_width_shares; ///< width/height of single confirmed objects, the last 400
    std::size_t m_next_share = 0;
};

} // namespace edgetrain::vision
