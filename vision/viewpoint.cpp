#include "viewpoint.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace edgetrain::vision {

void Viewpoint::fitDetector(const LabelResult &labels, DetectorOptions *d)
{
    std::vector<double> heights;
    for (const Track &t : labels.tracks)
        if (t.state == Track::State::Accepted)
            for (const TrackBox &b : t.boxes)
                heights.push_back(b.box.height);
    if (heights.empty())
        return;
    std::sort(heights.begin(), heights.end());
    d->min_height = std::max(8.0, heights[heights.size() / 10] * 0.85);
    d->max_height = std::max(d->min_height, heights[heights.size() * 9 / 10] * 1.15);
    d->scales = std::clamp(
        int(std::ceil(std::log(d->max_height / d->min_height) / std::log(1.2))) + 1, 1, 8);
}

core::TrainResult Viewpoint::trainStudent(core::Model &student, const std::string &sessionDir,
                                          const ViewpointOptions &o,
                                          const core::Trainer::Callbacks &callbacks,
                                          const std::atomic<bool> *stop)
{
    const core::TensorDataset train = CropDataset::load(sessionDir, Split::Train);
    std::unique_ptr<core::TensorDataset> validation;
    try {
        validation =
            std::make_unique<core::TensorDataset>(CropDataset::load(sessionDir, Split::Validation));
    } catch (const core::FormatError &) {
        // no validation crops (very few tracks): train without
    }
    core::TrainOptions t;
    t.epochs = o.epochs;
    t.batch = o.batch;
    t.lr = o.lr;
    t.sgd.momentum = 0.9;
    t.sgd.weight_decay = 5e-4;
    t.schedule = core::LrSchedule::parse("cosine");
    t.seed = o.crops.seed;
    return core::Trainer::run(student, train, validation.get(), t, callbacks, stop);
}

namespace {

using StudentDetect = std::function<std::vector<Detection>(const cv::Mat &bgr)>;

ViewpointEvaluation evaluateWith(FrameSource &source, Teacher &teacher, const StudentDetect &detect,
                                 const LabelResult &labels, const std::map<int, Split> &splits,
                                 const ViewpointOptions &o, const std::atomic<bool> *stop,
                                 const std::function<void(int, int)> &progress)
{
    ViewpointEvaluation e;
    e.match_iou = o.match_iou;
    // The frames with held-out boxes, a spread of them.
    std::set<int> frames;
    for (const Track &t : labels.tracks) {
        const auto s = splits.find(t.id);
        if (t.state != Track::State::Accepted || s == splits.end() || s->second != Split::Test)
            continue;
        for (const TrackBox &b : t.boxes)
            frames.insert(b.frame);
    }
    std::vector<int> chosen(frames.begin(), frames.end());
    if (int(chosen.size()) > o.eval_frames && o.eval_frames > 0) {
        std::vector<int> spread;
        for (int i = 0; i < o.eval_frames; ++i)
            spread.push_back(chosen[std::size_t(i) * chosen.size() / std::size_t(o.eval_frames)]);
        chosen = spread;
    }
    int teacherFoundHit[2] = {0, 0}, trackerOnlyHit[2] = {0, 0}; // [teacher, student]
    int studentCorrect = 0, teacherCorrect = 0;
    for (int f : chosen) {
        if (stop && stop->load())
            break;
        if (progress)
            progress(e.frames, int(chosen.size()));
        Frame frame;
        if (!source.seek(f) || !source.read(frame) || frame.index != f)
            throw SourceError("cannot seek to frame " + std::to_string(f) + " of '" +
                              source.description() + "'");
        ++e.frames;
        const std::vector<Detection> byTeacher = teacher.detect(frame.image);
        const std::vector<Detection> byStudent = detect(frame.image);
        e.teacher_detections += int(byTeacher.size());
        e.student_detections += int(byStudent.size());
        std::vector<cv::Rect2d> labelled;
        for (const Track &t : labels.tracks) {
            if (t.state != Track::State::Accepted)
                continue;
            const TrackBox *b = t.at(f);
            if (!b)
                continue;
            labelled.push_back(b->box);
            const auto s = splits.find(t.id);
            if (s == splits.end() || s->second != Split::Test)
                continue;
            auto found = [&](const std::vector<Detection> &dets) {
                return std::any_of(dets.begin(), dets.end(), [&](const Detection &x) {
                    return iou(x.box, b->box) >= o.match_iou;
                });
            };
            int *hits = b->source == BoxSource::Teacher ? teacherFoundHit : trackerOnlyHit;
            (b->source == BoxSource::Teacher ? e.teacher_found_boxes : e.tracker_only_boxes) += 1;
            hits[0] += found(byTeacher);
            hits[1] += found(byStudent);
            if (b->source == BoxSource::Tracker && !found(byTeacher)) {
                for (const Detection &x : byStudent)
                    if (iou(x.box, b->box) >= o.match_iou) {
                        e.gains.push_back({f, b->box, x.box});
                        break;
                    }
            }
        }
        for (const Detection &x : byStudent) {
            const bool ok =
                std::any_of(labelled.begin(), labelled.end(),
                            [&](const cv::Rect2d &b) { return iou(x.box, b) >= o.match_iou; }) ||
                std::any_of(byTeacher.begin(), byTeacher.end(),
                            [&](const Detection &t) { return iou(x.box, t.box) >= o.match_iou; });
            studentCorrect += ok;
        }
        for (const Detection &x : byTeacher)
            teacherCorrect +=
                std::any_of(labelled.begin(), labelled.end(),
                            [&](const cv::Rect2d &b) { return iou(x.box, b) >= o.match_iou; });
    }
    auto ratio = [](int a, int b) { return b > 0 ? double(a) / double(b) : 0.0; };
    e.teacher_recall_teacher_found = ratio(teacherFoundHit[0], e.teacher_found_boxes);
    e.student_recall_teacher_found = ratio(teacherFoundHit[1], e.teacher_found_boxes);
    e.teacher_recall_tracker_only = ratio(trackerOnlyHit[0], e.tracker_only_boxes);
    e.student_recall_tracker_only = ratio(trackerOnlyHit[1], e.tracker_only_boxes);
    e.student_precision = ratio(studentCorrect, e.student_detections);
    e.teacher_precision = ratio(teacherCorrect, e.teacher_detections);
    return e;
}

} // namespace

ViewpointEvaluation Viewpoint::evaluate(FrameSource &source, Teacher &teacher,
                                        StudentDetector &student, const LabelResult &labels,
                                        const std::map<int, Split> &splits,
                                        const ViewpointOptions &o, const std::atomic<bool> *stop,
                                        const std::function<void(int, int)> &progress)
{
    DetectorOptions d = o.detector;
    fitDetector(labels, &d);
    d.context = o.crops.context;
    return evaluateWith(
        source, teacher, [&](const cv::Mat &bgr) { return student.detect(bgr, d); }, labels, splits,
        o, stop, progress);
}

ViewpointEvaluation Viewpoint::evaluate(FrameSource &source, Teacher &teacher, Teacher &student,
                                        const LabelResult &labels,
                                        const std::map<int, Split> &splits,
                                        const ViewpointOptions &o, const std::atomic<bool> *stop,
                                        const std::function<void(int, int)> &progress)
{
    return evaluateWith(
        source, teacher, [&](const cv::Mat &bgr) { return student.detect(bgr); }, labels, splits, o,
        stop, progress);
}

} // namespace edgetrain::vision
