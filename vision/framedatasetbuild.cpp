#include "boxguard.h"
#include "core/error.h"
#include "core/json.h"
#include "core/random.h"
#include "framedataset.h"
#include "framedatasetparts.h"
#include "scenepaste.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace edgetrain::vision {

namespace fs = std::filesystem;
using namespace frameparts;

namespace {

/**
 * One build of a session's frame dataset, in the order FrameDataset::build documents: plan the
 * sampling, fit the ground plane from the labels, read the source once (sampled frames at the
 * input size, frames for the median background, objects to cut out), make the background and
 * the cut-outs, write every sample and its copies, then the backgrounds and the index.
 */
class Build
{
public:
    Build(const std::string &sessionDir, const LabelResult &labels, FrameSource &source,
          const FrameDatasetOptions &o, const FrameDataset::Progress &progress,
          const std::atomic<bool> *stop)
        : m_labels(labels), m_source(source), m_o(o), m_progress(progress), m_stop(stop),
          m_target(frameFolder(sessionDir)), m_frameSize(source.frameSize()),
          m_rng(m_o.seed ^ 0x4652414d45ull)
    {}

    FrameDatasetStats run()
    {
        plan();
        fitGroundPlane();
        m_tmp = m_target.stage();
        readSource();
        if (!stopped()) {
            makeBackground();
            writeSamples();
        }
        if (stopped()) {
            fs::remove_all(m_tmp);
            m_stats.seconds = elapsed();
            return m_stats;
        }
        writeBackgrounds();
        writeIndex();
        m_target.replace();
        if (m_progress)
            m_progress(m_total, m_total);
        return m_stats;
    }

private:
    /** A sampled frame, kept at the input size until the background is known: copies with
     *  objects pasted need it, and so do the cut-outs (ScenePaste). */
    struct Kept
    {
        cv::Mat base;
        std::vector<core::LabelBox> boxes;
        Split split;
        int frame;
    };
    /** A labelled object of a training frame, as a crop of the frame. */
    struct Candidate
    {
        cv::Mat crop;
        cv::Rect rect;  // the crop, working-size pixels
        cv::Rect2d box; // the label box, working-size pixels
    };

    bool stopped() const { return m_stop && m_stop->load(); }
    double elapsed() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }

    /** The input size, the frames labelled, and every how many frames a sample is taken. */
    void plan()
    {
        m_stats.round = m_labels.round;
        m_stats.input =
            m_o.input.area() > 0 ? m_o.input : FrameDataset::inputSize(m_frameSize, m_o.width);
        if (m_stats.input.width % 8 || m_stats.input.height % 8)
            throw core::SpecError("frame dataset: the input size must be multiples of 8, not " +
                                  std::to_string(m_stats.input.width) + "x" +
                                  std::to_string(m_stats.input.height));
        m_total = m_source.frameCount() > 0 ? m_source.frameCount() : m_labels.stats.frames;
        if (m_labels.stats.frames > 0)
            m_total = std::min(m_total, m_labels.stats.frames); // frames past labelling: no labels
        if (m_o.max_frame > 0)
            m_total = std::min(m_total, m_o.max_frame);
        const std::int64_t sampleBytes = std::int64_t(3) * m_stats.input.area() * 4;
        if (m_o.every > 0) {
            m_stats.every = m_o.every;
        } else {
            const double perFrame = 1.0 + m_o.augmented * 0.8;
            const double room = std::max<double>(1.0, double(m_o.budget_bytes / sampleBytes) -
                                                          std::max(0, m_o.backgrounds));
            m_stats.every = std::max(1, int(std::ceil(m_total * perFrame / room)));
        }
        m_medianStep = std::max(m_stats.every, m_total / 25);
        // The median and the cut-outs at most 1280 px wide: a 1080p camera's median frames stay
        // under 80 MB (vtest.avi's 768 px: the source frames themselves).
        m_workScale = std::min(1.0, 1280.0 / std::max(1, m_frameSize.width));
        m_work = cv::Size(int(std::lround(m_frameSize.width * m_workScale)),
                          int(std::lround(m_frameSize.height * m_workScale)));
        m_kx = double(m_stats.input.width) / std::max(1, m_frameSize.width);
        m_ky = double(m_stats.input.height) / std::max(1, m_frameSize.height);
    }

    bool nearCut(int f) const
    {
        return std::any_of(m_labels.cuts.begin(), m_labels.cuts.end(),
                           [&](int c) { return std::abs(f - c) <= m_o.cut_margin; });
    }

    Split splitOf(int f) const
    {
        if (m_o.validation_period <= 0)
            return Split::Train;
        const int block = f / std::max(1, m_o.block_frames);
        return block % m_o.validation_period == m_o.validation_period / 2 ? Split::Validation
                                                                          : Split::Train;
    }

    bool whollyInFrame(const cv::Rect2d &r) const
    {
        const cv::Rect2d frame(0, 0, m_frameSize.width, m_frameSize.height);
        return BoxGuard::check(r, m_frameSize).ok() && (r & frame) == r;
    }

    /** The ground plane first, from the labels alone (boxes wholly in the frame, training
     *  frames, one fixed view only: across a scene cut no floor holds): it places pasted
     *  objects and settles which of two nested boxes of very different sizes stands on the
     *  floor. */
    void fitGroundPlane()
    {
        std::vector<cv::Rect2d> planeBoxes;
        for (int f = 0; m_labels.cuts.empty() && f < m_total; f += m_stats.every) {
            if (splitOf(f) != Split::Train)
                continue;
            for (const core::LabelBox &b : FrameDataset::frameBoxes(m_labels, f, m_o)) {
                const cv::Rect2d r = rectOf(b);
                if (!b.ignore && whollyInFrame(r))
                    planeBoxes.push_back(r);
            }
        }
        m_stats.ground = GroundPlane::fit(planeBoxes, m_frameSize);
    }

    cv::Mat atWork(const cv::Mat &image) const
    {
        cv::Mat out;
        if (m_workScale >= 1.0)
            out = image.clone();
        else
            cv::resize(image, out, m_work, 0, 0, cv::INTER_AREA);
        return out;
    }

    /** One pass over the source: the sampled frames, the median's frames, the cut-out
     *  candidates. */
    void readSource()
    {
        if (!m_source.seek(0))
            throw SourceError("cannot seek to the start of '" + m_source.description() + "'");
        Frame frame;
        while (m_source.read(frame)) {
            if (stopped())
                break;
            const int f = frame.index;
            if (f >= m_total)
                break;
            if (m_progress && f % 25 == 0)
                m_progress(f, m_total);
            const bool sampled = f % m_stats.every == 0 && !nearCut(f);
            const bool median = f % m_medianStep == 0;
            if (median)
                m_forMedian.push_back(atWork(frame.image));
            if (sampled)
                keepSample(frame);
        }
    }

    void keepSample(const Frame &frame)
    {
        const int f = frame.index;
        cv::Mat base;
        cv::resize(frame.image, base, m_stats.input, 0, 0, cv::INTER_AREA);
        const Split split = splitOf(f);
        const auto inSource =
            FrameDataset::frameBoxes(m_labels, f, m_o, &m_stats.same_object, &m_stats.ground);
        ++m_stats.frames[split == Split::Train ? 0 : 1];
        m_kept.push_back({base,
                          clipped(scaled(inSource, m_kx, m_ky, m_o.min_height_px), m_stats.input),
                          split, f});
        // One fixed view only: across a scene cut neither the background nor a floor holds.
        if (split == Split::Train && m_o.pasted > 0 && m_labels.cuts.empty())
            addCandidates(frame, inSource);
    }

    /** Up to two objects of the frame that stand alone, cut out with a margin for pasting. */
    void addCandidates(const Frame &frame, const std::vector<core::LabelBox> &inSource)
    {
        const cv::Rect workRect(0, 0, m_work.width, m_work.height);
        int cut = 0;
        cv::Mat workImage; // made for the first object cut out of this frame
        for (const core::LabelBox &b : inSource) {
            const cv::Rect2d r = rectOf(b);
            if (b.ignore || !whollyInFrame(r))
                continue;
            const bool alone = std::none_of(inSource.begin(), inSource.end(), [&](const auto &o2) {
                return &o2 != &b && (rectOf(o2) & r).area() > 0;
            });
            if (!alone || cut >= 2 || m_candidates.size() >= 400 || r.height < 24)
                continue;
            const cv::Rect2d w(r.x * m_workScale, r.y * m_workScale, r.width * m_workScale,
                               r.height * m_workScale);
            const double mx = 0.15 * w.width + 2, my = 0.15 * w.height + 2;
            const cv::Rect rect = cv::Rect(int(w.x - mx), int(w.y - my), int(w.width + 2 * mx),
                                           int(w.height + 2 * my)) &
                                  workRect;
            if (workImage.empty())
                workImage = m_workScale >= 1.0 ? frame.image : atWork(frame.image);
            m_candidates.push_back({workImage(rect).clone(), rect, w});
            ++cut;
        }
    }

    /** The scene without its moving objects (the median), and the objects cut out against it. */
    void makeBackground()
    {
        if (m_forMedian.size() >= 3) {
            const cv::Mat full = medianImage(m_forMedian);
            cv::resize(full, m_background, m_stats.input, 0, 0, cv::INTER_AREA);
            for (const Candidate &c : m_candidates) {
                const cv::Rect2d inCrop(c.box.x - c.rect.x, c.box.y - c.rect.y, c.box.width,
                                        c.box.height);
                if (auto cutout = ScenePaste::cut(c.crop, full(c.rect), inCrop))
                    m_cutouts.push_back(std::move(*cutout));
            }
        }
        m_forMedian.clear();
        m_candidates.clear();
        m_stats.cutouts = int(m_cutouts.size());
    }

    void write(const cv::Mat &image, const std::vector<core::LabelBox> &boxes, Split split,
               int frame, int pasted = 0)
    {
        char name[32];
        std::snprintf(name, sizeof name, "%06d.png", m_written++);
        if (!cv::imwrite((m_tmp / name).string(), image, {cv::IMWRITE_PNG_COMPRESSION, 1}))
            throw core::IoError("cannot write '" + (m_tmp / name).string() + "'");
        core::Json j;
        j.set("file", name).set("split", splitName(split)).set("frame", frame);
        j.set("boxes", boxesJson(boxes));
        if (pasted > 0) // the last `pasted` boxes are objects pasted on (ScenePaste)
            j.set("pasted", pasted);
        m_samples.push(std::move(j));
        const int s = split == Split::Train ? 0 : 1;
        ++m_stats.samples[s];
        for (const core::LabelBox &b : boxes)
            ++(b.ignore ? m_stats.ignores[s] : m_stats.objects[s]);
    }

    /** Every kept frame, and for a training frame its copies: objects pasted on where the
     *  ground plane and cut-outs allow, jittered otherwise. */
    void writeSamples()
    {
        for (const Kept &k : m_kept) {
            if (stopped())
                break;
            write(k.base, k.boxes, k.split, k.frame);
            if (k.split != Split::Train)
                continue;
            for (int c = 0; c < m_o.augmented; ++c) {
                std::vector<core::LabelBox> moved;
                if (c < m_o.pasted && m_stats.ground.usable && !m_cutouts.empty()) {
                    cv::Mat composite = k.base.clone();
                    const auto pasted = ScenePaste::paste(composite, m_cutouts, m_stats.ground,
                                                          m_frameSize, m_kx, m_ky, k.boxes, m_rng);
                    moved = k.boxes;
                    moved.insert(moved.end(), pasted.begin(), pasted.end());
                    m_stats.pasted += int(pasted.size());
                    write(photometric(composite, m_rng), moved, k.split, k.frame,
                          int(pasted.size()));
                    continue;
                }
                const cv::Mat jittered = augment(k.base, k.boxes, m_rng, &moved);
                write(jittered, moved, k.split, k.frame);
            }
        }
        m_kept.clear();
    }

    void writeBackgrounds()
    {
        if (m_background.empty())
            return;
        for (int k = 0; k < m_o.backgrounds; ++k) {
            std::vector<core::LabelBox> none;
            write(k == 0 ? m_background : augment(m_background, {}, m_rng, &none), {}, Split::Train,
                  -1);
            ++m_stats.backgrounds;
        }
    }

    /** index.json, inside the staging folder: the folder's rename makes it and the images
     *  current together. */
    void writeIndex()
    {
        core::Json index;
        index.set("format", "edgetrain-frames-1").set("source", m_labels.source);
        index.set("input_width", m_stats.input.width).set("input_height", m_stats.input.height);
        index.set("frame_width", m_frameSize.width).set("frame_height", m_frameSize.height);
        index.set("every", m_stats.every).set("max_frame", m_total);
        core::Json ground;
        ground.set("usable", m_stats.ground.usable).set("slope", m_stats.ground.slope);
        ground.set("offset", m_stats.ground.offset).set("r2", m_stats.ground.r2);
        ground.set("boxes", m_stats.ground.boxes);
        ground.set("low", m_stats.ground.low).set("high", m_stats.ground.high);
        index.set("ground_plane", std::move(ground)).set("cutouts", m_stats.cutouts);
        index.set("same_object", m_stats.same_object);
        m_stats.seconds = elapsed();
        index.set("round", m_stats.round).set("seconds", m_stats.seconds); // for stats()
        index.set("samples", std::move(m_samples));
        std::ofstream out(m_tmp / "index.json", std::ios::binary | std::ios::trunc);
        out << index.dump(1) << '\n';
        if (!out)
            throw core::IoError("cannot write '" + (m_tmp / "index.json").string() + "'");
    }

    const std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    const LabelResult &m_labels;
    FrameSource &m_source;
    const FrameDatasetOptions &m_o;
    const FrameDataset::Progress &m_progress;
    const std::atomic<bool> *m_stop;
    const DatasetFolder m_target;
    const cv::Size m_frameSize;
    core::Rng m_rng;
    FrameDatasetStats m_stats;
    int m_total = 0, m_medianStep = 1, m_written = 0;
    double m_workScale = 1.0, m_kx = 1.0, m_ky = 1.0;
    cv::Size m_work;
    fs::path m_tmp;
    core::Json m_samples = core::Json::array();
    std::vector<cv::Mat> m_forMedian; // source frames at the working size
    std::vector<Kept> m_kept;
    std::vector<Candidate> m_candidates;
    std::vector<Cutout> m_cutouts;
    cv::Mat m_background; // the scene without its moving objects, at the input size
};

} // namespace

FrameDatasetStats FrameDataset::build(const std::string &sessionDir, const LabelResult &labels,
                                      FrameSource &source, const FrameDatasetOptions &o,
                                      const Progress &progress, const std::atomic<bool> *stop)
{
    return Build(sessionDir, labels, source, o, progress, stop).run();
}

} // namespace edgetrain::vision
