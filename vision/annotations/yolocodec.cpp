#include "vision/annotations/yolocodec.h"

#include "core/error.h"
#include "core/fileio.h"
#include "vision/annotations/annotationtext.h"
#include "vision/groundtruth.h"

#include <algorithm>
#include <filesystem>

namespace edgetrain::vision {

using namespace Internal;

namespace fs = std::filesystem;

GroundTruth YoloCodec::read(const std::string &path, const ImportTarget &target) const
{
    const cv::Size frameSize = target.frame_size;
    const int frameCount = target.frame_count;
    const std::string &category = target.category;
    if (!fs::is_directory(path))
        throw core::IoError("'" + path +
                            "' is not a folder (YOLO: one .txt per frame and "
                            "classes.txt)");
    std::vector<std::string> classes;
    const fs::path classesFile = fs::path(path) / "classes.txt";
    if (fs::exists(classesFile)) {
        const std::string text = core::readFile(classesFile.string());
        for (std::string_view line : lines(text))
            classes.emplace_back(trim(line));
        while (!classes.empty() && classes.back().empty())
            classes.pop_back();
    } else {
        classes.push_back(category);
    }
    std::vector<fs::path> files;
    for (const auto &entry : fs::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".txt" &&
            entry.path().filename() != "classes.txt")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    GroundTruth gt;
    int boxes = 0;
    for (const fs::path &file : files) {
        const std::string name = file.string();
        const int frame = numberInName(file.filename().string());
        if (frame < 0)
            throw core::FormatError(name + ": the file name has no frame number "
                                           "(frame_000123.txt)");
        checkFrame(frame, frameCount, 0, name + ": file name");
        if (gt.frame(frame))
            throw core::FormatError(name + ": frame " + std::to_string(frame) +
                                    " has a second file");
        TruthFrame &f = gt.ensureFrame(frame);
        f.done = true;
        const std::string text = core::readFile(name);
        const auto rows = lines(text);
        for (std::size_t l = 0; l < rows.size(); ++l) {
            if (trim(rows[l]).empty())
                continue;
            const std::string where = name + ":" + std::to_string(l + 1);
            const auto cols = splitSpaces(rows[l]);
            if (cols.size() != 5)
                throw core::FormatError(where + ": " + std::to_string(cols.size()) +
                                        " columns, expected 5 (class cx cy w h)");
            static const char *kColumns[] = {"class", "cx", "cy", "w", "h"};
            double v[5];
            for (int c = 0; c < 5; ++c)
                if (!parseNumber(cols[std::size_t(c)], v[c]))
                    throw core::FormatError(
                        where + ": column " + std::to_string(c + 1) + " (" + kColumns[c] + "): '" +
                        std::string(cols[std::size_t(c)]) + "' is not a number");
            int cls = 0;
            if (!parseInteger(cols[0], cls) || cls < 0 || cls >= int(classes.size()))
                throw core::FormatError(where + ": column 1 (class): unknown class index '" +
                                        std::string(cols[0]) + "' (" +
                                        std::to_string(classes.size()) + " classes" +
                                        (fs::exists(classesFile) ? " in classes.txt" : "") + ")");
            const std::string &label = classes[std::size_t(cls)];
            if (label != category && label != kIgnoreLabel)
                throw core::FormatError(where + ": column 1 (class): class " + std::to_string(cls) +
                                        " '" + label + "' is not '" + category + "' (nor '" +
                                        kIgnoreLabel + "')");
            const double W = frameSize.width, H = frameSize.height;
            TruthBox b;
            b.box = checkBox({(v[1] - v[3] / 2) * W, (v[2] - v[4] / 2) * H, v[3] * W, v[4] * H},
                             frameSize, where, {"cx/w", "cy/h", "w", "h"});
            b.ignore = label == kIgnoreLabel;
            f.boxes.push_back(b);
            ++boxes;
        }
    }
    gt.note = "imported from " + path + " (YOLO): " + std::to_string(boxes) + " boxes in " +
              std::to_string(files.size()) + " files";
    return gt;
}

void YoloCodec::write(const GroundTruth &gt, const std::string &path) const
{
    if (fs::exists(path) && (!fs::is_directory(path) || !fs::is_empty(path)))
        throw core::IoError("'" + path +
                            "' exists and is not an empty folder (YOLO export "
                            "writes one file per frame into a new folder)");
    if (gt.frame_size.width <= 0 || gt.frame_size.height <= 0)
        throw core::Error("YOLO export needs the frame size");
    writeTextFile((fs::path(path) / "classes.txt").string(), gt.category + "\n");
    const double W = gt.frame_size.width, H = gt.frame_size.height;
    for (const TruthFrame &f : gt.frames) {
        std::string out;
        for (const TruthBox &b : f.boxes) {
            if (b.ignore)
                continue; // YOLO cannot say "ignore"
            const auto c = (b.box.tl() + b.box.br()) * 0.5;
            out += "0 " + num(c.x / W, 6) + ' ' + num(c.y / H, 6) + ' ' + num(b.box.width / W, 6) +
                   ' ' + num(b.box.height / H, 6) + '\n';
        }
        writeTextFile((fs::path(path) / frameFileName(f.index, ".txt")).string(), out);
    }
}

std::string YoloCodec::losses(const GroundTruth &gt) const
{
    int ignored = 0;
    for (const TruthFrame &f : gt.frames)
        ignored += int(std::count_if(f.boxes.begin(), f.boxes.end(),
                                     [](const TruthBox &b) { return b.ignore; }));
    if (ignored > 0)
        return "YOLO has no ignore boxes: " + std::to_string(ignored) + " left out";
    return {};
}

} // namespace edgetrain::vision
