#include "verifiedframes.h"

#include "core/error.h"
#include "vision/framesource.h"

#include <QFileInfo>

#include <cstdlib>
#include <fstream>
#include <set>

namespace edgetrain::app {

vision::GroundTruth readVerifiedTruth(const std::string &motFile, const std::string &framesFile,
                                      vision::FrameSource &source)
{
    vision::GroundTruth truth = vision::GroundTruth::importFile(
        motFile, vision::AnnotationFormat::Mot, source.frameSize(), source.frameCount());
    if (framesFile.empty())
        return truth;
    std::ifstream in(framesFile);
    if (!in)
        throw core::IoError("cannot read '" + framesFile + "'");
    std::set<int> listed;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        char *end = nullptr;
        const long f = std::strtol(line.c_str(), &end, 10);
        if (end == line.c_str() || f < 0 || (source.frameCount() > 0 && f >= source.frameCount()))
            throw core::FormatError(framesFile + ":" + std::to_string(n) + ": '" + line +
                                    "' is not a frame index of the source");
        listed.insert(int(f));
    }
    // Only the listed frames were checked whole; a listed frame without boxes has none.
    for (vision::TruthFrame &f : truth.frames)
        f.done = listed.count(f.index) > 0;
    for (int f : listed)
        truth.ensureFrame(f).done = true;
    return truth;
}

std::string detectorPart(const QString &teacherSpec)
{
    const QString suffix = QStringLiteral("+motion");
    return (teacherSpec.endsWith(suffix) ? teacherSpec.left(teacherSpec.size() - suffix.size())
                                         : teacherSpec)
        .toStdString();
}

bool fixedCamera(const QString &source)
{
    return QFileInfo(source).isFile() && !source.startsWith(QLatin1String("/dev/"));
}

BaselineDetectors::BaselineDetectors(const QString &teacherSpec, const QString &source,
                                     std::optional<float> teacherThreshold, bool sceneCuts)
{
    teacher = vision::Teacher::create(detectorPart(teacherSpec));
    if (teacherThreshold)
        teacher->threshold = *teacherThreshold;
    if (fixedCamera(source) && !sceneCuts)
        motion = vision::Teacher::create("motion");
}

std::vector<VerifiedDetector> BaselineDetectors::list() const
{
    std::vector<VerifiedDetector> l{{"teacher", teacher.get(), teacher->threshold}};
    if (motion)
        l.push_back({"motion", motion.get(), motion->threshold});
    return l;
}

VerifiedRun::VerifiedRun(vision::FrameSource &source, vision::GroundTruth truth,
                         std::vector<VerifiedDetector> detectors, int first, int last,
                         const StepProgress &progress, const std::atomic<bool> *stop,
                         bool pendingToo)
    : m_truth(std::move(truth)), m_detectors(std::move(detectors))
{
    std::set<int> frames;
    for (const vision::TruthFrame &f : m_truth.frames)
        if ((f.done || pendingToo) && f.index >= first && f.index <= last)
            frames.insert(f.index);
    m_frames.assign(frames.begin(), frames.end());
    std::vector<vision::Teacher *> run;
    for (const VerifiedDetector &d : m_detectors) {
        if (d.runThreshold >= 0)
            d.detector->threshold = d.runThreshold;
        run.push_back(d.detector);
    }
    if (frames.empty()) { // nothing to run: every detector scores nothing
        m_run.detections.resize(m_detectors.size());
        m_run.detect_seconds.assign(m_detectors.size(), 0.0);
        return;
    }
    m_run = vision::DetectionRun::run(
        source, run, frames,
        [&](int done, int total) {
            if (progress)
                progress(done, total,
                         QStringLiteral("verified frames: %1 of %2").arg(done).arg(total));
        },
        stop);
}

int VerifiedRun::frames(int first, int last) const
{
    int n = 0;
    for (const vision::TruthFrame &f : m_truth.frames)
        n += f.done && f.index >= first && f.index <= last;
    return n;
}

std::vector<vision::DetectorScore> VerifiedRun::score(int first, int last, double iou) const
{
    vision::MetricsOptions m;
    m.iou = iou;
    m.first_frame = first;
    m.last_frame = last;
    std::vector<vision::DetectorScore> scores;
    for (std::size_t i = 0; i < m_detectors.size(); ++i) {
        m.threshold = m_detectors[i].threshold;
        scores.push_back(vision::DetectionMetrics::evaluate(m_detectors[i].name,
                                                            m_run.detections[i], m_truth, m));
    }
    return scores;
}

double VerifiedRun::fps(std::size_t i) const
{
    return i < m_run.detect_seconds.size() && m_run.detect_seconds[i] > 0
               ? double(m_run.frames) / m_run.detect_seconds[i]
               : 0.0;
}

} // namespace edgetrain::app
