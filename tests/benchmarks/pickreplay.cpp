// pick_replay: which frames to verify first. Replays a session's verified frames the student
// never saw in three orders -- spread over time (what an even pick verifies first), by
// descending disagreement (Disagreement::score of teacher, motion and student there), and in
// time order -- and after each added frame prints the student-minus-motion F1 difference with
// its 95 % paired bootstrap interval over frames (vision::Bootstrap), how many frames each
// order needs before that interval is clear of zero and stays so, and before it holds the
// difference on all the frames and stays so.
//
// Usage: pick_replay --session DIR [--truth GT --truth-frames LIST] [--first F] [--json]
//   DIR: a full-frame session on a video file (labels.json, detector.safetensors). The verified
//   frames: a MOT gt.txt and the list of frames checked whole (as viewpoint --truth takes them),
//   else the session's truth.json. F: the first frame the student never saw (default: the
//   labels' max_frames). Prints a table on stdout (with --json, one JSON object last).

#include "app/session/disagreement.h"
#include "app/session/verifiedframes.h"
#include "core/json.h"
#include "vision/bootstrap.h"
#include "vision/framesource.h"
#include "vision/groundtruth.h"
#include "vision/labelresult.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

using namespace edgetrain;

namespace {

struct Step
{
    int frame = 0;
    double delta = 0;
    vision::Interval ci;
};

struct Order
{
    std::string name;
    std::vector<int> frames;
    std::vector<Step> steps;
    int settledAt = 0; // frames needed before the interval is clear of zero for good; 0: never
    int coversAt = 0;  // frames needed before the interval holds the all-frames difference for good
};

/** Farthest first: the middle frame, then each time the frame farthest from those taken (ties:
 *  the earlier), as an even pick spreads its first frames over the span. */
std::vector<int> spreadOrder(const std::vector<int> &sorted)
{
    std::vector<int> order;
    std::set<int> taken;
    if (sorted.empty())
        return order;
    order.push_back(sorted[sorted.size() / 2]);
    taken.insert(order.back());
    while (order.size() < sorted.size()) {
        int best = -1, bestDistance = -1;
        for (int f : sorted) {
            if (taken.count(f))
                continue;
            int d = INT_MAX;
            for (int t : taken)
                d = std::min(d, std::abs(f - t));
            if (d > bestDistance) {
                best = f;
                bestDistance = d;
            }
        }
        order.push_back(best);
        taken.insert(best);
    }
    return order;
}

std::vector<vision::FrameMatch> subset(const std::vector<vision::FrameMatch> &all,
                                       const std::set<int> &frames)
{
    std::vector<vision::FrameMatch> out;
    for (const vision::FrameMatch &m : all)
        if (frames.count(m.frame))
            out.push_back(m);
    return out;
}

void replay(Order &order, const vision::BootstrapDetector &student,
            const vision::BootstrapDetector &motion)
{
    std::set<int> verified;
    for (int f : order.frames) {
        verified.insert(f);
        vision::BootstrapDetector s = student, m = motion;
        s.frames = subset(student.frames, verified);
        m.frames = subset(motion.frames, verified);
        const auto r = vision::Bootstrap::run({s, m}, {{0, 1}});
        order.steps.push_back({f, r.differences[0].a_minus_b.f1, r.differences[0].ci.f1});
    }
    // Clear of zero says the sign; holding the all-frames figure says a biased order did not
    // settle on a wrong size.
    const double all = order.steps.back().delta;
    for (std::size_t k = order.steps.size(); k > 0 && order.steps[k - 1].ci.clearOfZero(); --k)
        order.settledAt = int(k);
    for (std::size_t k = order.steps.size(); k > 0 && order.steps[k - 1].ci.contains(all); --k)
        order.coversAt = int(k);
}

void printTable(const std::vector<Order> &orders, int first)
{
    // A Markdown table, as docs/benchmarks.md shows it; * marks an interval clear of zero.
    std::printf("student - motion F1 on the %zu verified frames >= %d (95 %% paired "
                "bootstrap interval over frames; * clear of zero)\n\n| n |",
                orders[0].steps.size(), first);
    for (const Order &o : orders)
        std::printf(" %s: frame | difference |", o.name.c_str());
    std::printf("\n|---|");
    for (std::size_t i = 0; i < orders.size(); ++i)
        std::printf("---|---|");
    std::printf("\n");
    for (std::size_t k = 0; k < orders[0].steps.size(); ++k) {
        std::printf("| %zu |", k + 1);
        for (const Order &o : orders) {
            const Step &s = o.steps[k];
            std::printf(" %d | %+.3f [%+.3f, %+.3f]%s |", s.frame, s.delta, s.ci.lo, s.ci.hi,
                        s.ci.clearOfZero() ? " *" : "");
        }
        std::printf("\n");
    }
    std::printf("\n");
    for (const Order &o : orders) {
        if (o.settledAt)
            std::printf("%s: clear of zero from %d frames on", o.name.c_str(), o.settledAt);
        else
            std::printf("%s: not clear of zero for good", o.name.c_str());
        std::printf("; holds the %zu-frame difference from %d frames on\n", orders[0].steps.size(),
                    o.coversAt);
    }
}

void printJson(const std::vector<Order> &orders, const std::map<int, double> &score, int first)
{
    core::Json j;
    j.set("first_frame", first).set("frames", int(orders[0].steps.size()));
    for (const Order &o : orders) {
        core::Json steps = core::Json::array();
        for (const Step &s : o.steps) {
            core::Json js;
            js.set("frame", s.frame).set("score", score.at(s.frame)).set("delta_f1", s.delta);
            js.set("lo", s.ci.lo).set("hi", s.ci.hi);
            steps.push(std::move(js));
        }
        core::Json jo;
        jo.set("steps", std::move(steps)).set("settled_at", o.settledAt);
        jo.set("covers_at", o.coversAt);
        j.set(o.name, std::move(jo));
    }
    std::printf("%s\n", j.dump().c_str());
}

int fail(const std::string &what)
{
    std::fprintf(stderr, "pick_replay: %s\n", what.c_str());
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    std::string session, gtFile, framesFile;
    int first = -1;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--session") && i + 1 < argc)
            session = argv[++i];
        else if (!std::strcmp(argv[i], "--truth") && i + 1 < argc)
            gtFile = argv[++i];
        else if (!std::strcmp(argv[i], "--truth-frames") && i + 1 < argc)
            framesFile = argv[++i];
        else if (!std::strcmp(argv[i], "--first") && i + 1 < argc)
            first = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--json"))
            json = true;
        else
            return fail(std::string("unknown argument '") + argv[i] +
                        "' (usage: pick_replay --session DIR [--truth GT --truth-frames LIST] "
                        "[--first F] [--json])");
    }
    if (session.empty())
        return fail("--session is required");
    try {
        const auto labels = vision::LabelResult::load(session);
        vision::GroundTruth truth;
        if (gtFile.empty()) {
            truth = vision::GroundTruth::load(session).doneOnly();
        } else {
            auto video = vision::FrameSource::open(labels.source);
            truth = app::readVerifiedTruth(gtFile, framesFile, *video).doneOnly();
        }
        if (first < 0)
            first = labels.options.max_frames;
        std::set<int> frames;
        for (const vision::TruthFrame &f : truth.frames)
            if (f.index >= first)
                frames.insert(f.index);
        if (frames.size() < 2)
            return fail("fewer than 2 verified frames from frame " + std::to_string(first));

        app::DisagreementRun run;
        run.source = QString::fromStdString(labels.source);
        run.teacher = QString::fromStdString(labels.teacher);
        run.labels = &labels;
        run.sessionDir = session;
        run.frames = frames;
        const auto sources = app::Disagreement::collect(
            run,
            [](int done, int total, const QString &) {
                std::fprintf(stderr, "\rframe %d of %d", done, total);
            },
            nullptr);
        std::fprintf(stderr, "\n");
        std::map<int, double> score;
        for (const app::FrameDisagreement &d : app::Disagreement::score(sources))
            score[d.frame] = d.score();

        vision::MetricsOptions metrics;
        metrics.first_frame = first;
        vision::BootstrapDetector student, motion;
        for (const app::DisagreementSource &s : sources) {
            if (s.name != "student" && s.name != "motion")
                continue;
            vision::BootstrapDetector &d = s.name == "student" ? student : motion;
            d.name = s.name;
            d.threshold = s.threshold;
            d.frames = vision::DetectionMetrics::frameMatches(s.boxes, truth, metrics);
        }
        if (motion.name.empty())
            return fail("the session's source is not a video file: no motion baseline");

        const std::vector<int> sorted(frames.begin(), frames.end());
        std::vector<int> byScore = sorted;
        std::stable_sort(byScore.begin(), byScore.end(),
                         [&](int a, int b) { return score[a] > score[b]; });
        std::vector<Order> orders{{"spread", spreadOrder(sorted), {}, 0},
                                  {"disagreement", byScore, {}, 0},
                                  {"time", sorted, {}, 0}};
        for (Order &o : orders)
            replay(o, student, motion);

        printTable(orders, first);
        if (json)
            printJson(orders, score, first);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pick_replay: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
