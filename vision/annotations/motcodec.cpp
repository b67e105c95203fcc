#include "vision/annotations/motcodec.h"

#include "core/error.h"
#include "core/fileio.h"
#include "vision/annotations/annotationtext.h"
#include "vision/groundtruth.h"

#include <algorithm>

namespace edgetrain::vision {

using namespace Internal;

GroundTruth MotCodec::read(const std::string &path, const ImportTarget &target) const
{
    const cv::Size frameSize = target.frame_size;
    const int frameCount = target.frame_count;
    static const char *kColumns[] = {"frame",     "id",   "bb_left", "bb_top",    "bb_width",
                                     "bb_height", "conf", "class",   "visibility"};
    GroundTruth gt;
    const std::string text = core::readFile(path);
    const auto rows = lines(text);
    int boxes = 0, otherClass = 0;
    for (std::size_t l = 0; l < rows.size(); ++l) {
        if (trim(rows[l]).empty())
            continue;
        const std::string where = path + ":" + std::to_string(l + 1);
        const auto cols = split(rows[l], ',');
        if (cols.size() < 6)
            throw core::FormatError(where + ": " + std::to_string(cols.size()) +
                                    " columns, expected at least 6 (frame,id,bb_left,bb_top,"
                                    "bb_width,bb_height[,conf,class,visibility])");
        double v[9] = {0, -1, 0, 0, 0, 0, 1, -1, -1};
        for (std::size_t c = 0; c < std::min<std::size_t>(cols.size(), 9); ++c)
            if (!parseNumber(cols[c], v[c]))
                throw core::FormatError(where + ": column " + std::to_string(c + 1) + " (" +
                                        kColumns[c] + "): '" + std::string(cols[c]) +
                                        "' is not a number");
        int frame = 0, id = 0, cls = 0;
        if (!parseInteger(cols[0], frame))
            throw core::FormatError(where + ": column 1 (frame): '" + std::string(cols[0]) +
                                    "' is not a whole number");
        if (!parseInteger(cols[1], id))
            throw core::FormatError(where + ": column 2 (id): '" + std::string(cols[1]) +
                                    "' is not a whole number");
        checkFrame(frame - 1, frameCount, 1, where + ": column 1 (frame)");
        TruthFrame &f = gt.ensureFrame(frame - 1);
        f.done = true;
        if (cols.size() >= 8 && !parseInteger(cols[7], cls))
            throw core::FormatError(where + ": column 8 (class): '" + std::string(cols[7]) +
                                    "' is not a whole number");
        if (cols.size() < 8)
            cls = -1;
        bool ignore = v[6] == 0.0;
        if (cls == 2 || cls == 7 || cls == 8 || cls == 12)
            ignore = true; // MOT's distractors: neither required nor false when found
        else if (cls != -1 && cls != 1) {
            ++otherClass; // vehicles, occluders: not the category
            continue;
        }
        TruthBox b;
        b.box = checkBox({v[2] - 1.0, v[3] - 1.0, v[4], v[5]}, frameSize, where,
                         {"bb_left", "bb_top", "bb_width", "bb_height"});
        b.ignore = ignore;
        b.id = id;
        f.boxes.push_back(b);
        ++boxes;
    }
    gt.note = "imported from " + path + " (MOT): " + std::to_string(boxes) + " boxes";
    if (otherClass > 0)
        gt.note += ", " + std::to_string(otherClass) + " rows of other classes left out";
    return gt;
}

void MotCodec::write(const GroundTruth &gt, const std::string &path) const
{
    std::string out;
    for (const TruthFrame &f : gt.frames)
        for (const TruthBox &b : f.boxes) {
            out += std::to_string(f.index + 1) + ',' + std::to_string(b.id) + ',' +
                   num(b.box.x + 1.0, 3) + ',' + num(b.box.y + 1.0, 3) + ',' + num(b.box.width, 3) +
                   ',' + num(b.box.height, 3) + ',' + (b.ignore ? "0" : "1") + ",1,-1\n";
        }
    writeTextFile(path, out);
}

std::string MotCodec::losses(const GroundTruth &gt) const
{
    const int empty = int(std::count_if(gt.frames.begin(), gt.frames.end(),
                                        [](const TruthFrame &f) { return f.boxes.empty(); }));
    if (empty > 0)
        return "MOT cannot list a frame without boxes: " + std::to_string(empty) +
               " empty frames left out";
    return {};
}

} // namespace edgetrain::vision
