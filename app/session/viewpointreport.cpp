#include "viewpointreport.h"

#include <cstdio>

namespace edgetrain::app::Internal {

core::Json frameDatasetReport(const vision::FrameDatasetStats &stats,
                              const vision::LabelResult &labels, const Say &say)
{
    char line[300];
    std::snprintf(line, sizeof line,
                  "frame dataset %dx%d, every %d frames: train %d frames (%d samples, %d "
                  "objects, %d ignore), validation %d frames (%d objects), %d backgrounds, "
                  "%.1f s",
                  stats.input.width, stats.input.height, stats.every, stats.frames[0],
                  stats.samples[0], stats.objects[0], stats.ignores[0], stats.frames[1],
                  stats.objects[1], stats.backgrounds, stats.seconds);
    say(line);
    if (stats.same_object > 0) {
        std::snprintf(line, sizeof line,
                      "%d label boxes became ignore regions: the second box of an object "
                      "boxed twice (the teacher at two scales, two tracks on one object), "
                      "or boxes of very different sizes disagreeing on one spot",
                      stats.same_object);
        say(line);
    }
    const vision::GroundPlane &g = stats.ground;
    if (g.usable)
        std::snprintf(line, sizeof line,
                      "pasted %d objects (%d cut out) onto training copies at the ground "
                      "plane's sizes: height %.3f x bottom row %+.1f px (R^2 %.2f), from %d "
                      "boxes",
                      stats.pasted, stats.cutouts, g.slope, g.offset, g.r2, g.boxes);
    else if (!labels.cuts.empty())
        std::snprintf(line, sizeof line,
                      "no objects pasted: the video has %d scene cuts (no one fixed view)",
                      int(labels.cuts.size()));
    else
        std::snprintf(line, sizeof line,
                      "no objects pasted: the labels show no ground plane (%d boxes, slope "
                      "%.3f, R^2 %.2f)",
                      g.boxes, g.slope, g.r2);
    say(line);
    core::Json dj;
    dj.set("width", stats.input.width).set("height", stats.input.height);
    dj.set("pasted_objects", stats.pasted).set("cutouts", stats.cutouts);
    dj.set("same_object_ignored", stats.same_object);
    dj.set("ground_plane_usable", g.usable).set("ground_plane_slope", g.slope);
    dj.set("ground_plane_offset", g.offset).set("ground_plane_r2", g.r2);
    dj.set("every", stats.every).set("train_frames", stats.frames[0]);
    dj.set("train_samples", stats.samples[0]).set("train_objects", stats.objects[0]);
    dj.set("val_frames", stats.frames[1]).set("val_objects", stats.objects[1]);
    return dj;
}

core::Json operatingPointReport(const vision::OperatingPoint &p, const std::string &against,
                                const Say &say)
{
    const char *where =
        against == "verified" ? "the frames a person verified" : "the session's labels";
    char line[260];
    if (p.beta == 1.0)
        std::snprintf(line, sizeof line,
                      "student threshold %.3f: the best F1 (%.3f: recall %.3f, precision %.3f) "
                      "against %s on %d training frames (%d boxes)",
                      double(p.threshold), p.f1, p.recall, p.precision, where, p.frames, p.boxes);
    else
        std::snprintf(line, sizeof line,
                      "student threshold %.3f: the best F%.2g (%.3f: recall %.3f, precision "
                      "%.3f, F1 %.3f) against %s on %d training frames (%d boxes)",
                      double(p.threshold), p.beta, p.f_beta, p.recall, p.precision, p.f1, where,
                      p.frames, p.boxes);
    say(line);
    core::Json pj;
    pj.set("threshold", double(p.threshold)).set("f1", p.f1).set("recall", p.recall);
    pj.set("precision", p.precision).set("frames", p.frames).set("boxes", p.boxes);
    pj.set("beta", p.beta).set("f_beta", p.f_beta);
    pj.set("against", against);
    return pj;
}

core::Json scoreJson(const vision::DetectorScore &s)
{
    core::Json j;
    j.set("recall", s.recall).set("precision", s.precision).set("f1", s.f1);
    j.set("ap50", s.ap50).set("ap50_95", s.ap50_95);
    j.set("truths", s.truths).set("detections", s.detections).set("threshold", double(s.threshold));
    return j;
}

std::string scoreLine(const vision::DetectorScore &s)
{
    char line[200];
    std::snprintf(line, sizeof line,
                  "  %-10s recall %.3f  precision %.3f  F1 %.3f  AP50 %.3f  AP50:95 %.3f  (%d/%d)",
                  s.name.c_str(), s.recall, s.precision, s.f1, s.ap50, s.ap50_95, s.true_positives,
                  s.truths);
    return line;
}

namespace {

/** "0.833 [0.600, 1.000]". */
std::string withInterval(double v, const vision::Interval &ci)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.3f [%.3f, %.3f]", v, ci.lo, ci.hi);
    return text;
}

void setIntervals(core::Json &j, const vision::FigureIntervals &ci)
{
    j.set("recall_lo", ci.recall.lo).set("recall_hi", ci.recall.hi);
    j.set("precision_lo", ci.precision.lo).set("precision_hi", ci.precision.hi);
    j.set("f1_lo", ci.f1.lo).set("f1_hi", ci.f1.hi);
    j.set("ap50_lo", ci.ap50.lo).set("ap50_hi", ci.ap50.hi);
}

} // namespace

core::Json verifiedSpanReport(const vision::GroundTruth &truth,
                              const std::vector<VerifiedDetections::Detector> &detectors,
                              int baselines, int first, int last, double iou,
                              const std::string &what, const Say &say)
{
    core::Json v;
    // The frames the window's headline is computed from (spread over disagreement picks).
    const HeadlineFrames headline = headlineFrames(truth, first, last);
    const int n = int(headline.truth.frames.size());
    v.set("frames", n).set("iou", iou);
    v.set("disagreement_frames", headline.disagreement_frames).set("biased", headline.biased);
    if (n == 0)
        return v;
    say("verified frames " + what + " (" + std::to_string(n) + " frames, IoU " +
        std::to_string(iou).substr(0, 4) + ", 95 % intervals over the frames):");
    const IntervalScores scored = scoreWithIntervals(headline.truth, detectors, first, last, iou);
    const auto &scores = scored.scores;
    const auto &ci = scored.bootstrap.intervals;
    auto line = [&](std::size_t i) {
        const vision::DetectorScore &s = scores[i];
        char counts[48];
        std::snprintf(counts, sizeof counts, "  AP50:95 %.3f  (%d/%d)", s.ap50_95, s.true_positives,
                      s.truths);
        char name[16];
        std::snprintf(name, sizeof name, "  %-10s", s.name.c_str());
        say(name + std::string(" recall ") + withInterval(s.recall, ci[i].recall) + "  precision " +
            withInterval(s.precision, ci[i].precision) + "  F1 " + withInterval(s.f1, ci[i].f1) +
            "  AP50 " + withInterval(s.ap50, ci[i].ap50) + counts);
    };
    auto json = [&](std::size_t i) {
        core::Json j = scoreJson(scores[i]);
        setIntervals(j, ci[i]);
        return j;
    };
    for (int i = 0; i < baselines; ++i) {
        line(std::size_t(i));
        v.set(scores[std::size_t(i)].name, json(std::size_t(i)));
    }
    core::Json perRound = core::Json::array();
    for (std::size_t r = std::size_t(baselines); r < scores.size(); ++r) {
        line(r);
        perRound.push(json(r).set("round", int(r) - baselines + 1));
        if (r + 1 == scores.size())
            v.set("student", json(r));
    }
    v.set("rounds", std::move(perRound));
    core::Json leads = core::Json::array();
    for (const vision::BootstrapDifference &d : scored.bootstrap.differences) {
        char text[200];
        std::snprintf(text, sizeof text,
                      "  student − %s: recall %+.3f [%+.3f, %+.3f]  precision %+.3f [%+.3f, "
                      "%+.3f]  F1 %+.3f [%+.3f, %+.3f]: %s",
                      d.b.c_str(), d.a_minus_b.recall, d.ci.recall.lo, d.ci.recall.hi,
                      d.a_minus_b.precision, d.ci.precision.lo, d.ci.precision.hi, d.a_minus_b.f1,
                      d.ci.f1.lo, d.ci.f1.hi,
                      leadSettled(n, d)         ? "settled"
                      : n < kMinFramesToCompare ? "too few frames to compare"
                                                : "not settled");
        say(text);
        core::Json lead;
        lead.set("over", d.b).set("recall", d.a_minus_b.recall);
        lead.set("precision", d.a_minus_b.precision).set("f1", d.a_minus_b.f1);
        lead.set("ap50", d.a_minus_b.ap50);
        setIntervals(lead, d.ci);
        lead.set("f1_clear_of_zero", d.ci.f1.clearOfZero()).set("settled", leadSettled(n, d));
        leads.push(std::move(lead));
    }
    v.set("leads", std::move(leads));
    core::Json boot;
    boot.set("resamples", scored.bootstrap.resamples)
        .set("seed", std::to_string(scored.bootstrap.seed))
        .set("level", scored.bootstrap.level)
        .set("unit", "frame");
    v.set("bootstrap", std::move(boot));
    return v;
}

} // namespace edgetrain::app::Internal
