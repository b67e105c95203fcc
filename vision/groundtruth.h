#pragma once

#include "core/json.h"
#include "labeling.h"
#include "vision/annotations/annotationcodec.h"

#include <opencv2/core.hpp>

#include <string>
#include <vector>

namespace edgetrain::vision {

/** One box drawn (or imported) by a person, in source pixels (x, y: top-left, 0-based). */
struct TruthBox
{
    cv::Rect2d box;
    /** Neither required nor a false detection when found (too small, mostly hidden; COCO's
     *  iscrowd, MOT's conf 0). */
    bool ignore = false;
    int id = -1; // track/object id if known
};

/** A frame's boxes. `done`: a person has checked every object on it (only done frames are
 *  scored by default; an imported frame is done). */
struct TruthFrame
{
    int index = 0;
    std::vector<TruthBox> boxes;
    bool done = false;
    /** Which pick chose the frame for verifying: "spread" (the even, unbiased one),
     *  "disagreement" (where the detectors disagree), or "" (imported, or added by hand). */
    std::string pick;
};

/**
 * Verified frames of a session (`<dir>/truth.json`): boxes a person made true, against which
 * detectors are scored. Frames are kept sorted by index, one entry per index.
 */
class GroundTruth
{
public:
    std::string source; // the video/folder the frame indices refer to
    std::string category = "person";
    cv::Size frame_size;
    std::string note;               // how the boxes were made (free text, kept)
    std::vector<TruthFrame> frames; // sorted by index, unique

    TruthFrame *frame(int index);
    const TruthFrame *frame(int index) const;
    /** The frame `index`, inserted (empty, not done) in order if absent. */
    TruthFrame &ensureFrame(int index);
    int doneFrames() const;
    int boxCount() const; // all boxes, ignore ones included
    /** Replaces the frames `other` holds (by index), keeps the others. Throws core::Error when
     *  the frame sizes differ (both known). */
    void merge(const GroundTruth &other);
    /** A copy with the done frames only. */
    GroundTruth doneOnly() const;

    core::Json toJson() const;
    /** Throws core::FormatError naming `where` and the JSON path of the bad field. */
    static GroundTruth fromJson(const core::Json &json, const std::string &where);
    /** <dir>/truth.json, atomically (temp file + rename). Throws core::IoError. */
    void save(const std::string &sessionDir) const;
    /** Throws core::IoError if absent or unreadable, core::FormatError if malformed. */
    static GroundTruth load(const std::string &sessionDir);
    static bool exists(const std::string &sessionDir);

    /**
     * Reads a file (a folder for YOLO) in a format (its AnnotationCodec); frames with no box are
     * still frames where the format can list them (see each codec). Throws core::FormatError naming
     * the file, the line (or XML element / JSON path) and the field; core::IoError if it cannot be
     * read. Nothing is half-imported: returns a complete GroundTruth or throws. frame_count (> 0)
     * bounds the frame numbers (<= 0: unknown, unbounded); frame_size (required) bounds boxes:
     * a box outside the frame by more than 1 px is an error, slightly outside is clipped.
     * Every imported frame is done. Numbers are read with std::from_chars (locale-free).
     */
    static GroundTruth importFile(const std::string &path, AnnotationFormat format,
                                  cv::Size frame_size, int frame_count,
                                  const std::string &category = "person");
    /** Writes all frames in a format (yolo: a new or empty folder with one .txt per frame +
     *  classes.txt; the others: one file, written atomically). Throws core::IoError (yolo: also
     *  when the folder holds files). Numbers via std::to_chars (locale-free). */
    void exportFile(const std::string &path, AnnotationFormat format) const;
    /** What exportFile(format) cannot carry for these frames, for the user ("" if nothing):
     *  YOLO's dropped ignore boxes, MOT's frames without boxes. */
    std::string exportLosses(AnnotationFormat format) const;

    /** The session's accepted tracks as annotations (ids = track ids), for exporting labels:
     *  every labelled frame (0 .. frames-1) is a frame, not done. */
    static GroundTruth fromLabels(const LabelResult &labels);
};

} // namespace edgetrain::vision
