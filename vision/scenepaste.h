#pragma once

#include "core/detectionloss.h"
#include "core/random.h"

#include <opencv2/core.hpp>

#include <optional>
#include <vector>

namespace edgetrain::vision {

/**
 * A fixed camera's ground plane as its labels show it: an object's height in source pixels
 * grows linearly with the row of its bottom edge (nearer the camera, lower in the frame,
 * taller): h = slope * bottom + offset, fitted by least squares on the labels' boxes.
 */
struct GroundPlane
{
    double slope = 0.0, offset = 0.0;
    double r2 = 0.0;              // the share of the heights' variance the line explains
    int boxes = 0;                // boxes it was fitted on
    double low = 0.0, high = 0.0; // the lowest and highest bottom row among them
    bool usable = false;          // enough boxes over enough rows, taller when lower, in frame

    /** Fits boxes in source pixels of a frame of `frame` size (usable needs >= 20 boxes whose
     *  bottoms span >= 10 % of the frame's height, a positive slope explaining >= 30 % of the
     *  heights' variance — vtest.avi's people: 65 % — and a height at the frame's bottom row
     *  between 8 px and 95 % of the frame). */
    static GroundPlane fit(const std::vector<cv::Rect2d> &boxes, cv::Size frame);
    double heightAt(double bottom) const { return slope * bottom + offset; }
};

/** A labelled object cut out of a frame: its pixels, how opaque each is, and its label box in
 *  the cut-out's pixels. */
struct Cutout
{
    cv::Mat bgr;    // CV_8UC3
    cv::Mat alpha;  // CV_32F in [0, 1], the same size
    cv::Rect2d box; // the label box, in the cut-out's pixels
};

/**
 * Scene-aware copy-paste augmentation for a fixed camera. What the frames before a split show
 * is what a student learns: on vtest.avi nobody walks in the lower third of the frame before
 * frame 480 (13 of 318 labelled people there, none below row 480), and after it the people
 * nearest the camera walk exactly there; the student, which saw that floor only empty, scores
 * them low. Objects the labels found are cut out where they differ from the scene's
 * background (the median frame) and pasted onto training frames at places the labels never
 * covered, at the height the ground plane gives that row, so the student sees people on every
 * part of the floor at the size they would have there.
 */
class ScenePaste
{
public:
    /** The object in `box` (source pixels) of `frame`: its pixels where they differ from
     *  `background` (same size as the frame), cleaned by an opening and a closing and feathered.
     *  Nothing for a box cut by the frame's edge, smaller than 24 px, whose difference covers
     *  under 20 % of the box (standing still), or over half of the margin of a tenth around it
     *  (a change of light, a crowd). */
    static std::optional<Cutout> cut(const cv::Mat &frame, const cv::Mat &background,
                                     const cv::Rect2d &box);

    /** Pastes 1-3 cut-outs onto `image` (the frame resized by kx, ky: input pixels): each at a
     *  bottom row drawn uniformly over the ground plane's rows from `plane.low` to the frame's
     *  bottom, sized by the plane (x 0.9-1.1), mirrored at random, placed where it overlaps no
     *  box of `existing` nor an earlier paste by more than a quarter of the smaller. Returns the
     *  pasted boxes (input pixels, objects). */
    static std::vector<core::LabelBox> paste(cv::Mat &image, const std::vector<Cutout> &cutouts,
                                             const GroundPlane &plane, cv::Size frame, double kx,
                                             double ky, const std::vector<core::LabelBox> &existing,
                                             core::Rng &rng);
};

} // namespace edgetrain::vision
