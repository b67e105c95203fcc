#pragma once

#include "boxguard.h"
#include "core/json.h"

#include <opencv2/core.hpp>

#include <optional>
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

/** An OpenCV error inside a tracker while it followed one object: where, and OpenCV's words. */
struct TrackFailure
{
    int frame = 0;
    bool backward = false; // in the run back through the frames before its first teacher hit
    std::string reason;
};

/** One object followed through the video: the teacher's hits and what the tracker carried
 *  between and around them. Boxes are sorted by frame, one per frame. */
struct Track
{
    enum class State { Accepted, Rejected };
    int id = 0;
    State state = State::Accepted;
    std::string note; // why it was rejected or trimmed
    /** The first tracker error on this object. Forwards it ended that tracker run (a later
     *  teacher hit may start the object again); backwards only its start was not followed
     *  further back. The boxes are kept. */
    std::optional<TrackFailure> failure;
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
    int every = 10; // the teacher runs on every k-th frame
    /** Trackers work on frames resized by this (speed; memory), but never on an image under
     *  320 px wide: a small camera's people would be too few pixels to follow. */
    double track_scale = 0.5;
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
    int max_frames = 0;               // 0: the whole source
    double checkpoint_every_s = 15.0; // how often the labels so far go to Labeler's Checkpoint

    /** The scale the trackers' images are made at for frames `frameWidth` pixels wide. */
    double trackerScale(int frameWidth) const;
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
    /** Teacher boxes no tracker could take (BoxGuard), by reason: never labels. */
    DroppedBoxes dropped;
    double min_box_px = 0.0;  // the smallest side a box needed (frame pixels)
    int tracker_failures = 0; // OpenCV errors inside a tracker: each ended one object's run
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
    int announced_frames = -1; // what the source said it holds (-1: a camera, unknown)
    std::vector<int> cuts;     // frames that start a new scene
    std::vector<Track> tracks;
    LabelStats stats;
    bool cancelled = false;
    /** Why labelling stopped before the source's end (an unreadable frame, a teacher error, a
     *  full disk), with the frame; empty when it did not. The tracks up to there are kept. */
    std::string stopped;
    /** The self-training round these labels are at: 1 for the labeller's; a self-training pass
     *  writes the session's next round here before the session records it. */
    int round = 1;

    /** The source gave fewer frames than it announced (a camera gone, a file cut short). */
    bool endedEarly() const;
    void updateStats();
    core::Json toJson() const;
    /** Throws core::FormatError naming `where`, the track and the box for a file that is not
     *  labels: a box without area or with a coordinate not a number. */
    static LabelResult fromJson(const core::Json &json, const std::string &where);
    /** <dir>/labels.json, written atomically. */
    void save(const std::string &sessionDir) const;
    static LabelResult load(const std::string &sessionDir);
};

} // namespace edgetrain::vision
