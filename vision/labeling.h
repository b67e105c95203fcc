#pragma once

#include "core/json.h"
#include "framesource.h"
#include "teacher.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace edgetrain::vision {

/** Who made a box: the teacher, the tracker between teacher hits, or the student's confident
 *  detection joining the labels in self-training ("teacher", "tracker", "student" in JSON). */
enum class BoxSource { Teacher, Tracker, Student };
const char *boxSourceName(BoxSource source);

struct TrackBox
{
    int frame = 0;
    cv::Rect2d box;
    BoxSource source = BoxSource::Tracker;
    float confidence =
        0.0f; // teacher / student: its score; tracker: appearance similarity, decaying
};

/** One object followed through the video: the teacher's hits and what the tracker carried
 *  between and around them. Boxes are sorted by frame, one per frame. */
struct Track
{
    enum class State { Accepted, Rejected };
    int id = 0;
    State state = State::Accepted;
    std::string note; // why it was rejected or trimmed
    std::vector<TrackBox> boxes;

    int teacherBoxes() const;
    int trackerBoxes() const;
    const TrackBox *at(int frame) const;
    /** Keeps frames [first, last] only. */
    void trim(int first, int last);
};

struct LabelOptions
{
    std::string tracker = "kcf";
    int every = 10;                // the teacher runs on every k-th frame
    double track_scale = 0.5;      // trackers work on frames resized by this (speed; memory)
    int backward_frames = 75;      // how far back a new object is followed (frames kept in memory)
    int max_tracker_run = 50;      // frames a track may go on without a teacher confirmation
    double match_iou = 0.4;        // a teacher hit continues a track it overlaps this much
    double min_appearance = 0.35;  // colour-histogram similarity to the teacher's view of it
    double max_scale_change = 1.8; // box area against the teacher's, either way
    double cut_threshold = 0.22;   // Bhattacharyya distance of frame histograms: a scene cut
    int min_track_boxes = 6;       // shorter tracks are rejected
    /** Tracks the teacher confirmed in fewer than this share of the teacher's runs over their
     *  span are rejected (ignore regions, not objects): on the verified frames of vtest.avi and
     *  Megamind.avi such tracks were nearly all false (a hand, hair, a lamp post). */
    double min_teacher_share = 0.2;
    int max_frames = 0; // 0: the whole source
};

struct LabelStats
{
    int frames = 0;
    int teacher_runs = 0;
    int teacher_detections = 0;
    int teacher_boxes = 0;      // in accepted tracks
    int tracker_only_boxes = 0; // in accepted tracks
    int tracks = 0;             // accepted
    int rejected_tracks = 0;
    int drift_stops = 0; // tracker runs ended by the appearance or size check
    double seconds = 0.0;
    double fps = 0.0;
};

struct LabelResult
{
    std::string source;
    std::string teacher;
    LabelOptions options;
    cv::Size frame_size;
    double source_fps = 25.0;
    std::vector<int> cuts; // frames that start a new scene
    std::vector<Track> tracks;
    LabelStats stats;
    bool cancelled = false;
    /** The self-training round these labels are at: 1 for the labeller's; a self-training pass
     *  writes the session's next round here before the session records it. */
    int round = 1;

    void updateStats();
    core::Json toJson() const;
    static LabelResult fromJson(const core::Json &json, const std::string &where);
    /** <dir>/labels.json, written atomically. */
    void save(const std::string &sessionDir) const;
    static LabelResult load(const std::string &sessionDir);
};

/**
 * Label propagation: the teacher runs every k-th frame (the others go to its observe(), for a
 * teacher with a model of the scene); each hit either continues a track it
 * overlaps or starts one, which is followed backwards (through the frames kept in memory) and
 * forwards with an OpenCV tracker until the tracker fails, the box leaves the frame, a scene cut
 * comes, or a drift check fails: the box's colour histogram no longer resembles the teacher's
 * view of the object, its size runs away, or no teacher hit has confirmed it for too long.
 * Trackers' own verdicts are not trusted: on vtest.avi they slide onto the lamp post reporting
 * success. A backward run that meets another track's box merges the two. At the end, tracks
 * shorter than `min_track_boxes` and tracks the teacher confirmed too rarely (`min_teacher_share`
 * of its runs over the track's span) are rejected, with a note saying why.
 */
class Labeler
{
public:
    using Progress = std::function<void(int frame, int frames, const LabelStats &)>;
    static LabelResult run(FrameSource &source, Teacher &teacher, const LabelOptions &options,
                           const Progress &progress = {}, const std::atomic<bool> *stop = nullptr);
};

/** Frame histogram difference for scene cuts (Bhattacharyya distance of HSV histograms). */
double sceneChange(const cv::Mat &a, const cv::Mat &b);
/** Hue-saturation histogram of a region, normalised, for appearance checks. */
cv::Mat appearance(const cv::Mat &bgr, const cv::Rect2d &box);
double similarity(const cv::Mat &histA, const cv::Mat &histB);

} // namespace edgetrain::vision
