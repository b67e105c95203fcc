#include "cropdataset.h"

#include "core/error.h"
#include "core/random.h"
#include "datasetfolder.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace edgetrain::vision {

namespace fs = std::filesystem;

const char *splitName(Split split)
{
    switch (split) {
    case Split::Train:
        return "train";
    case Split::Validation:
        return "val";
    case Split::Test:
        return "test";
    }
    return "";
}

std::map<int, Split> CropDataset::splitTracks(const LabelResult &labels, const CropOptions &o)
{
    std::vector<int> ids;
    for (const Track &t : labels.tracks)
        if (t.state == Track::State::Accepted)
            ids.push_back(t.id);
    core::Rng rng(o.seed ^ 0x53504c4954ull);
    for (std::size_t i = ids.size(); i > 1; --i)
        std::swap(ids[i - 1], ids[std::size_t(rng.below(i))]);
    const auto n = double(ids.size());
    std::size_t nTrain = std::size_t(std::llround(n * o.train));
    std::size_t nVal = std::size_t(std::llround(n * o.validation));
    // With three tracks or more, every split gets one.
    if (ids.size() >= 3) {
        nTrain = std::clamp<std::size_t>(nTrain, 1, ids.size() - 2);
        nVal = std::clamp<std::size_t>(nVal, 1, ids.size() - nTrain - 1);
    }
    std::map<int, Split> out;
    for (std::size_t i = 0; i < ids.size(); ++i)
        out[ids[i]] = i < nTrain          ? Split::Train
                      : i < nTrain + nVal ? Split::Validation
                                          : Split::Test;
    return out;
}

void CropDataset::toTensor(const cv::Mat &crop, float *out)
{
    const int plane = crop.rows * crop.cols;
    for (int y = 0; y < crop.rows; ++y) {
        const auto *p = crop.ptr<cv::Vec3b>(y);
        for (int x = 0; x < crop.cols; ++x)
            for (int c = 0; c < 3; ++c)
                out[c * plane + y * crop.cols + x] = (float(p[x][c]) / 255.0f - 0.5f) / 0.25f;
    }
}

namespace {

DatasetFolder cropFolder(const std::string &sessionDir)
{
    return {fs::path(sessionDir) / "dataset", fs::path(sessionDir) / "dataset.building"};
}

/** The rows of an index.csv after its header, as fields with their line numbers; throws IoError
 *  without the file and FormatError naming it for a bad header or row. */
std::vector<std::pair<int, std::vector<std::string>>> indexRows(const std::string &indexPath)
{
    std::ifstream in(indexPath);
    if (!in)
        throw core::IoError("cannot read '" + indexPath + "' (run `edgetrain-cli dataset` first)");
    std::string line;
    std::getline(in, line);
    if (line.rfind("path,label,split", 0) != 0)
        throw core::FormatError(indexPath +
                                ": not a crop index (expected the header path,label,split,...)");
    std::vector<std::pair<int, std::vector<std::string>>> rows;
    int lineNo = 1;
    while (std::getline(in, line)) {
        ++lineNo;
        if (line.empty())
            continue;
        std::vector<std::string> cols;
        std::stringstream ss(line);
        for (std::string c; std::getline(ss, c, ',');)
            cols.push_back(c);
        if (cols.size() != 6 || (cols[1] != "0" && cols[1] != "1"))
            throw core::FormatError(indexPath + ":" + std::to_string(lineNo) +
                                    ": expected path,label(0|1),split,track,frame,source");
        rows.emplace_back(lineNo, std::move(cols));
    }
    return rows;
}

/** The box with `context` of its size around it, resized to `size`; the box must have passed
 *  BoxGuard::check on `image` (finite, partly inside). */
cv::Mat cropOf(const cv::Mat &image, const cv::Rect2d &box, double context, cv::Size size)
{
    // Outside the frame by at most a frame's size on each side: the padding stays bounded.
    const double W = image.cols, H = image.rows;
    const double x0 = std::clamp(box.x - box.width * context, -W, 2 * W);
    const double y0 = std::clamp(box.y - box.height * context, -H, 2 * H);
    const double x1 = std::clamp(box.x + box.width * (1 + context), -W, 2 * W);
    const double y1 = std::clamp(box.y + box.height * (1 + context), -H, 2 * H);
    const cv::Rect2d wide(x0, y0, x1 - x0, y1 - y0);
    // Outside the frame is filled by replicating the border, so crops keep their geometry.
    const cv::Rect r(int(std::floor(wide.x)), int(std::floor(wide.y)),
                     std::max(1, int(std::round(wide.width))),
                     std::max(1, int(std::round(wide.height))));
    cv::Mat padded;
    const int left = std::max(0, -r.x), top = std::max(0, -r.y);
    const int right = std::max(0, r.x + r.width - image.cols),
              bottom = std::max(0, r.y + r.height - image.rows);
    cv::copyMakeBorder(image, padded, top, bottom, left, right, cv::BORDER_REPLICATE);
    cv::Mat out;
    cv::resize(padded(cv::Rect(r.x + left, r.y + top, r.width, r.height)), out, size, 0, 0,
               cv::INTER_AREA);
    return out;
}

} // namespace

CropStats CropDataset::build(const std::string &sessionDir, const LabelResult &labels,
                             FrameSource &source, const CropOptions &o, const Progress &progress,
                             const std::atomic<bool> *stop)
{
    if (o.size.width < 8 || o.size.height < 8 || o.size.width > 512 || o.size.height > 512)
        throw core::SpecError("crop size must be between 8x8 and 512x512");
    const auto splits = splitTracks(labels, o);
    if (splits.empty())
        throw core::SpecError("no accepted track to build a dataset from");
    // Every box of every track (accepted or not) marks where background crops must not be.
    std::map<int, std::vector<cv::Rect2d>> occupied;
    std::map<int, std::vector<std::pair<const Track *, const TrackBox *>>> positives;
    std::vector<double> widths, heights;
    for (const Track &t : labels.tracks) {
        for (std::size_t i = 0; i < t.boxes.size(); ++i) {
            const TrackBox &b = t.boxes[i];
            occupied[b.frame].push_back(b.box);
            if (t.state == Track::State::Accepted && i % std::size_t(std::max(o.every, 1)) == 0) {
                positives[b.frame].push_back({&t, &b});
                widths.push_back(b.box.width);
                heights.push_back(b.box.height);
            }
        }
    }
    std::sort(widths.begin(), widths.end());
    std::sort(heights.begin(), heights.end());
    const DatasetFolder target = cropFolder(sessionDir);
    const fs::path building = target.stage();
    for (const char *s : {"train", "val", "test"})
        for (const char *c : {"pos", "neg"})
            fs::create_directories(building / s / c);
    std::ostringstream index;
    index << "path,label,split,track,frame,source\n";
    CropStats stats;
    std::map<int, std::set<int>> trackSeen;
    core::Rng rng(o.seed);
    if (!source.seek(0))
        throw SourceError("cannot rewind '" + source.description() + "' to build the dataset");
    const int last = positives.empty() ? -1 : positives.rbegin()->first;
    Frame frame;
    while (source.read(frame) && frame.index <= last) {
        if (stop && stop->load())
            throw core::Error("cancelled: the earlier dataset (if any) is left as it was");
        if (progress && frame.index % 25 == 0)
            progress(frame.index, last + 1);
        const auto it = positives.find(frame.index);
        if (it == positives.end())
            continue;
        for (const auto &[track, box] : it->second) {
            const Split split = splits.at(track->id);
            const int s = int(split);
            if (const GuardedBox g = BoxGuard::check(box->box, frame.image.size(), 2.0); !g.ok()) {
                stats.dropped.count(*g.fault);
                continue;
            }
            const cv::Mat crop = cropOf(frame.image, box->box, o.context, o.size);
            const std::string name = std::string(splitName(split)) + "/pos/t" +
                                     std::to_string(track->id) + "_f" +
                                     std::to_string(frame.index) + ".png";
            cv::imwrite((building / name).string(), crop);
            index << name << ",1," << splitName(split) << "," << track->id << "," << frame.index
                  << "," << boxSourceName(box->source) << "\n";
            ++stats.positives[s];
            trackSeen[s].insert(track->id);
        }
        // Near misses: windows shifted off or scaled around an object (IoU under 0.3 with every
        // box). Without them a student fires on any window that shows part of an object.
        if (o.near_misses) {
            int k = 0;
            for (const auto &[track, box] : it->second) {
                const cv::Rect2d &b = box->box;
                if (!BoxGuard::check(b, frame.image.size(), 2.0).ok())
                    continue; // counted with the positives above
                const double dx = (0.6 + 0.4 * rng.uniform()) * b.width * (rng.below(2) ? 1 : -1);
                const double dy = (0.45 + 0.3 * rng.uniform()) * b.height * (rng.below(2) ? 1 : -1);
                const double grow = rng.below(2) ? 1.9 : 0.5;
                const cv::Rect2d cands[] = {{b.x + dx, b.y, b.width, b.height},
                                            {b.x, b.y + dy, b.width, b.height},
                                            {b.x + b.width * (1 - grow) / 2,
                                             b.y + b.height * (1 - grow) / 2, b.width * grow,
                                             b.height * grow}};
                const cv::Rect2d &cand = cands[rng.below(3)];
                const auto &all = occupied[frame.index];
                if (cand.x < 0 || cand.y < 0 || cand.x + cand.width > frame.image.cols ||
                    cand.y + cand.height > frame.image.rows ||
                    std::any_of(all.begin(), all.end(),
                                [&](const cv::Rect2d &x) { return iou(x, cand) >= 0.3; }))
                    continue;
                const Split split = splits.at(track->id); // it shows part of this track's object
                const std::string name = std::string(splitName(split)) + "/neg/n" +
                                         std::to_string(frame.index) + "_" + std::to_string(k++) +
                                         ".png";
                cv::imwrite((building / name).string(),
                            cropOf(frame.image, cand, o.context, o.size));
                index << name << ",0," << splitName(split) << "," << track->id << "," << frame.index
                      << ",near-miss\n";
                ++stats.negatives[int(split)];
            }
        }
        // Background: windows of the objects' typical size that overlap nothing labelled.
        const int wanted = int(std::lround(o.negatives_per_positive * double(it->second.size())));
        const auto &busy = occupied[frame.index];
        const double bucket =
            double(core::mixHash(o.seed, std::uint64_t(frame.index), 7) % 1000) / 1000.0;
        const Split split = bucket < o.train                  ? Split::Train
                            : bucket < o.train + o.validation ? Split::Validation
                                                              : Split::Test;
        int made = 0;
        for (int attempt = 0; attempt < wanted * 20 && made < wanted; ++attempt) {
            const double h = heights[std::size_t(rng.below(heights.size()))];
            const double w = h * double(o.size.width) / double(o.size.height);
            if (w >= frame.image.cols || h >= frame.image.rows)
                continue;
            const cv::Rect2d cand(rng.uniform() * (frame.image.cols - w),
                                  rng.uniform() * (frame.image.rows - h), w, h);
            if (std::any_of(busy.begin(), busy.end(), [&](const cv::Rect2d &b) {
                    return (b & cand).area() > 0.05 * cand.area();
                }))
                continue;
            const std::string name = std::string(splitName(split)) + "/neg/f" +
                                     std::to_string(frame.index) + "_" + std::to_string(made) +
                                     ".png";
            cv::imwrite((building / name).string(), cropOf(frame.image, cand, 0.0, o.size));
            index << name << ",0," << splitName(split) << ",-1," << frame.index << ",background\n";
            ++stats.negatives[int(split)];
            ++made;
        }
    }
    for (int s = 0; s < 3; ++s)
        stats.tracks[s] = int(trackSeen[s].size());
    {
        std::ofstream out(building / "index.csv", std::ios::binary);
        out << index.str();
        if (!out)
            throw core::IoError("cannot write '" + (building / "index.csv").string() + "'");
    }
    target.replace(); // the new dataset is complete: it replaces the old one
    return stats;
}

std::string CropDataset::folder(const std::string &sessionDir)
{
    return cropFolder(sessionDir).current().string();
}

std::optional<CropStats> CropDataset::stats(const std::string &sessionDir)
{
    const std::string indexPath = (fs::path(folder(sessionDir)) / "index.csv").string();
    if (!fs::exists(indexPath))
        return std::nullopt;
    // As build() counts them: crops by label and split, and the tracks with a positive crop.
    CropStats s;
    std::set<std::string> tracks[3];
    for (const auto &[lineNo, cols] : indexRows(indexPath)) {
        int k = 0;
        while (k < 3 && cols[2] != splitName(Split(k)))
            ++k;
        if (k == 3)
            throw core::FormatError(indexPath + ":" + std::to_string(lineNo) + ": split '" +
                                    cols[2] + "' is not train, val or test");
        if (cols[1] == "1") {
            ++s.positives[k];
            tracks[k].insert(cols[3]);
        } else {
            ++s.negatives[k];
        }
    }
    for (int k = 0; k < 3; ++k)
        s.tracks[k] = int(tracks[k].size());
    return s;
}

core::TensorDataset CropDataset::load(const std::string &sessionDir, Split split)
{
    const fs::path root = folder(sessionDir);
    const std::string indexPath = (root / "index.csv").string();
    std::vector<float> images;
    std::vector<std::int32_t> labels;
    cv::Size size;
    for (const auto &[lineNo, cols] : indexRows(indexPath)) {
        if (cols[2] != splitName(split))
            continue;
        const cv::Mat crop = cv::imread((root / cols[0]).string(), cv::IMREAD_COLOR);
        if (crop.empty())
            throw core::FormatError(indexPath + ":" + std::to_string(lineNo) +
                                    ": cannot read image '" + cols[0] + "'");
        if (size.empty())
            size = crop.size();
        else if (crop.size() != size)
            throw core::FormatError(indexPath + ":" + std::to_string(lineNo) + ": '" + cols[0] +
                                    "' is not " + std::to_string(size.width) + "x" +
                                    std::to_string(size.height) + " like the others");
        const std::size_t at = images.size();
        images.resize(at + std::size_t(3 * size.area()));
        toTensor(crop, images.data() + at);
        labels.push_back(cols[1] == "1" ? 1 : 0);
    }
    if (labels.empty())
        throw core::FormatError(indexPath + ": the " + std::string(splitName(split)) +
                                " split is empty");
    return core::TensorDataset(root.string() + " (" + splitName(split) + ")",
                               core::Shape{3, size.height, size.width}, 2, std::move(images),
                               std::move(labels));
}

} // namespace edgetrain::vision
