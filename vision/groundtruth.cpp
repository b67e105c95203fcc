#include "groundtruth.h"

#include "core/error.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <sstream>

namespace edgetrain::vision {

namespace fs = std::filesystem;

AnnotationFormat annotationFormat(const std::string &name)
{
    if (name == "mot")
        return AnnotationFormat::Mot;
    if (name == "coco")
        return AnnotationFormat::Coco;
    if (name == "cvat")
        return AnnotationFormat::Cvat;
    if (name == "yolo")
        return AnnotationFormat::Yolo;
    throw core::Error("unknown annotation format '" + name + "' (known: mot, coco, cvat, yolo)");
}

std::string annotationFormatName(AnnotationFormat format)
{
    switch (format) {
    case AnnotationFormat::Mot:
        return "mot";
    case AnnotationFormat::Coco:
        return "coco";
    case AnnotationFormat::Cvat:
        return "cvat";
    case AnnotationFormat::Yolo:
        return "yolo";
    }
    return "?";
}

namespace {

constexpr const char *kIgnoreLabel = "ignore";

/** Locale-free number text: fixed with `decimals`, trailing zeros dropped. */
std::string num(double v, int decimals)
{
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    if (r.ec != std::errc()) // past 1e63 fixed notation does not fit: the shortest form does
        r = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, r.ptr);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0')
            s.pop_back();
        if (s.back() == '.')
            s.pop_back();
    }
    if (s == "-0")
        s = "0";
    return s;
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

/** The whole of `s` as a finite number (std::from_chars: no locale). */
bool parseNumber(std::string_view s, double &out)
{
    s = trim(s);
    if (!s.empty() && s.front() == '+')
        s.remove_prefix(1);
    if (s.empty())
        return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

bool parseInteger(std::string_view s, int &out)
{
    double d = 0;
    if (!parseNumber(s, d) || d != std::floor(d) || std::abs(d) > 1e9)
        return false;
    out = int(d);
    return true;
}

/** The last run of digits in a file name's stem ("frame_000123.png" -> 123); -1 if none. */
int numberInName(const std::string &name)
{
    const std::string stem = fs::path(name).stem().string();
    const auto last = stem.find_last_of("0123456789");
    if (last == std::string::npos)
        return -1;
    auto first = last;
    while (first > 0 && std::isdigit(static_cast<unsigned char>(stem[first - 1])))
        --first;
    if (last - first >= 9)
        return -1;
    return std::stoi(stem.substr(first, last - first + 1));
}

std::string frameFileName(int index, const char *extension)
{
    std::string digits = std::to_string(index);
    if (digits.size() < 6)
        digits.insert(0, 6 - digits.size(), '0');
    return "frame_" + digits + extension;
}

std::string readFile(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw core::IoError("cannot read '" + path + "'");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/** Writes `text` to `path` through a temporary file and a rename. */
void writeAtomically(const std::string &path, const std::string &text)
{
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty())
        fs::create_directories(parent);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out)
            throw core::IoError("cannot write '" + tmp + "'");
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec)
        throw core::IoError("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

/** Checks a frame number against [lo, lo + frame_count); `shown` is the number as written. */
void checkFrame(int index, int frameCount, int base, const std::string &where)
{
    if (index < 0 || (frameCount > 0 && index >= frameCount))
        throw core::FormatError(
            where + ": frame " + std::to_string(index + base) + " is not in the video (" +
            (frameCount > 0 ? std::to_string(base) + ".." + std::to_string(frameCount - 1 + base)
                            : ">= " + std::to_string(base)) +
            ")");
}

/**
 * A box in frame pixels, checked: positive size, at most 1 px outside the frame (then clipped).
 * `fields`: how the format names the left, top, right and bottom sides, for the message.
 */
cv::Rect2d checkBox(cv::Rect2d b, cv::Size frame, const std::string &where,
                    const std::array<const char *, 4> &fields)
{
    if (!(b.width > 0))
        throw core::FormatError(where + ": field '" + fields[2] + "': the box has no width (" +
                                num(b.width, 3) + ")");
    if (!(b.height > 0))
        throw core::FormatError(where + ": field '" + fields[3] + "': the box has no height (" +
                                num(b.height, 3) + ")");
    const std::string size = std::to_string(frame.width) + "x" + std::to_string(frame.height);
    auto outside = [&](const char *field, const std::string &what) {
        throw core::FormatError(where + ": field '" + field + "': the box " + what + " of the " +
                                size + " frame");
    };
    constexpr double kTolerance_px = 1.0;
    if (b.x < -kTolerance_px)
        outside(fields[0], "starts left (x " + num(b.x, 2) + ")");
    if (b.y < -kTolerance_px)
        outside(fields[1], "starts above (y " + num(b.y, 2) + ")");
    if (b.x + b.width > frame.width + kTolerance_px)
        outside(fields[2], "ends right (right edge " + num(b.x + b.width, 2) + ")");
    if (b.y + b.height > frame.height + kTolerance_px)
        outside(fields[3], "ends below (bottom edge " + num(b.y + b.height, 2) + ")");
    const cv::Rect2d clipped = b & cv::Rect2d(0, 0, frame.width, frame.height);
    if (clipped.width <= 0 || clipped.height <= 0)
        throw core::FormatError(where + ": the box lies outside the " + size + " frame");
    return clipped;
}

/** Splits text into lines (LF or CRLF). */
std::vector<std::string_view> lines(std::string_view text)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::vector<std::string_view> split(std::string_view line, char separator)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const auto end = line.find(separator, start);
        out.push_back(trim(line.substr(start, end - start)));
        if (end == std::string_view::npos)
            return out;
        start = end + 1;
    }
}

std::vector<std::string_view> splitSpaces(std::string_view line)
{
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])))
            ++i;
        const auto start = i;
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])))
            ++i;
        if (i > start)
            out.push_back(line.substr(start, i - start));
    }
    return out;
}

void requireFrameSize(cv::Size frame)
{
    if (frame.width <= 0 || frame.height <= 0)
        throw core::SpecError("importing annotations needs the frame size of the video");
}

// ---- MOT Challenge ----------------------------------------------------------------------------

GroundTruth importMot(const std::string &path, cv::Size frameSize, int frameCount)
{
    static const char *kColumns[] = {"frame",     "id",   "bb_left", "bb_top",    "bb_width",
                                     "bb_height", "conf", "class",   "visibility"};
    GroundTruth gt;
    const std::string text = readFile(path);
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

void exportMot(const GroundTruth &gt, const std::string &path)
{
    std::string out;
    for (const TruthFrame &f : gt.frames)
        for (const TruthBox &b : f.boxes) {
            out += std::to_string(f.index + 1) + ',' + std::to_string(b.id) + ',' +
                   num(b.box.x + 1.0, 3) + ',' + num(b.box.y + 1.0, 3) + ',' + num(b.box.width, 3) +
                   ',' + num(b.box.height, 3) + ',' + (b.ignore ? "0" : "1") + ",1,-1\n";
        }
    writeAtomically(path, out);
}

// ---- COCO -------------------------------------------------------------------------------------

/** Typed lookups into a JSON document that name the path of what is wrong. */
struct JsonReader
{
    std::string file;

    [[noreturn]] void fail(const std::string &path, const std::string &what) const
    {
        throw core::FormatError(file + ": " + path + ": " + what);
    }
    const core::Json &field(const core::Json &object, const std::string &path,
                            const char *key) const
    {
        const core::Json *v = object.isObject() ? object.find(key) : nullptr;
        if (!v)
            fail(path + "." + key, "missing");
        return *v;
    }
    const core::Json::Array &array(const core::Json &object, const std::string &path,
                                   const char *key) const
    {
        const core::Json &v = field(object, path, key);
        if (!v.isArray())
            fail(path + "." + key, "not an array");
        return v.toArray();
    }
    double number(const core::Json &v, const std::string &path) const
    {
        if (!v.isNumber())
            fail(path, "not a number");
        return v.toDouble();
    }
    std::int64_t integer(const core::Json &v, const std::string &path) const
    {
        const double d = number(v, path);
        if (d != std::floor(d) || std::abs(d) > 1e15)
            fail(path, "not a whole number (" + num(d, 3) + ")");
        return std::int64_t(d);
    }
    const std::string &text(const core::Json &v, const std::string &path) const
    {
        if (!v.isString())
            fail(path, "not a string");
        return v.toString();
    }
};

GroundTruth importCoco(const std::string &path, cv::Size frameSize, int frameCount,
                       const std::string &category)
{
    const core::Json doc = core::Json::parse(readFile(path), path);
    JsonReader r{path};
    if (!doc.isObject())
        r.fail("(top)", "not a JSON object");
    std::map<std::int64_t, std::string> categories;
    const auto &cats = r.array(doc, "(top)", "categories");
    for (std::size_t i = 0; i < cats.size(); ++i) {
        const std::string p = "categories[" + std::to_string(i) + "]";
        categories[r.integer(r.field(cats[i], p, "id"), p + ".id")] =
            r.text(r.field(cats[i], p, "name"), p + ".name");
    }
    GroundTruth gt;
    std::map<std::int64_t, int> frameOf; // image id -> frame
    const auto &images = r.array(doc, "(top)", "images");
    for (std::size_t i = 0; i < images.size(); ++i) {
        const std::string p = "images[" + std::to_string(i) + "]";
        const std::int64_t id = r.integer(r.field(images[i], p, "id"), p + ".id");
        const std::string &name = r.text(r.field(images[i], p, "file_name"), p + ".file_name");
        for (const char *key : {"width", "height"})
            if (const core::Json *v = images[i].find(key)) {
                const auto size = r.integer(*v, p + "." + key);
                const int expected = key[0] == 'w' ? frameSize.width : frameSize.height;
                if (size != expected)
                    r.fail(p + "." + key, std::to_string(size) + ", but the video's frames are " +
                                              std::to_string(frameSize.width) + "x" +
                                              std::to_string(frameSize.height));
            }
        int frame = -1;
        if (const core::Json *fi = images[i].find("frame_index"))
            frame = int(r.integer(*fi, p + ".frame_index"));
        else if ((frame = numberInName(name)) < 0)
            r.fail(p + ".file_name",
                   "'" + name + "' has no frame number (and the image no frame_index)");
        checkFrame(frame, frameCount, 0, path + ": " + p + " ('" + name + "')");
        if (frameOf.count(id))
            r.fail(p + ".id", "image id " + std::to_string(id) + " appears twice");
        frameOf[id] = frame;
        gt.ensureFrame(frame).done = true;
    }
    const auto &annotations = r.array(doc, "(top)", "annotations");
    for (std::size_t i = 0; i < annotations.size(); ++i) {
        const std::string p = "annotations[" + std::to_string(i) + "]";
        const core::Json &a = annotations[i];
        const std::int64_t image = r.integer(r.field(a, p, "image_id"), p + ".image_id");
        const auto it = frameOf.find(image);
        if (it == frameOf.end())
            r.fail(p + ".image_id", std::to_string(image) + " is no image of the file");
        const std::int64_t cat = r.integer(r.field(a, p, "category_id"), p + ".category_id");
        const auto c = categories.find(cat);
        if (c == categories.end())
            r.fail(p + ".category_id", std::to_string(cat) + " is not in 'categories'");
        if (c->second != category && c->second != kIgnoreLabel)
            r.fail(p + ".category_id", "category '" + c->second + "' is not '" + category +
                                           "' (nor '" + kIgnoreLabel + "')");
        const core::Json &bbox = r.field(a, p, "bbox");
        if (!bbox.isArray() || bbox.toArray().size() != 4)
            r.fail(p + ".bbox", "expected [x, y, width, height]");
        double v[4];
        for (int k = 0; k < 4; ++k)
            v[k] = r.number(bbox.toArray()[std::size_t(k)], p + ".bbox[" + std::to_string(k) + "]");
        TruthBox b;
        b.box = checkBox({v[0], v[1], v[2], v[3]}, frameSize, path + ": " + p,
                         {"bbox[0]", "bbox[1]", "bbox[2]", "bbox[3]"});
        b.ignore = c->second == kIgnoreLabel;
        if (const core::Json *crowd = a.find("iscrowd"))
            b.ignore = b.ignore || r.integer(*crowd, p + ".iscrowd") != 0;
        if (const core::Json *track = a.find("track_id"))
            b.id = int(r.integer(*track, p + ".track_id"));
        gt.ensureFrame(it->second).boxes.push_back(b);
    }
    gt.note = "imported from " + path + " (COCO): " + std::to_string(annotations.size()) +
              " boxes on " + std::to_string(images.size()) + " images";
    return gt;
}

void exportCoco(const GroundTruth &gt, const std::string &path)
{
    core::Json doc;
    core::Json info;
    info.set("description", gt.note).set("source", gt.source).set("producer", "EdgeTrain");
    doc.set("info", std::move(info));
    core::Json images = core::Json::array(), annotations = core::Json::array();
    int annotationId = 1;
    for (const TruthFrame &f : gt.frames) {
        core::Json image;
        image.set("id", f.index + 1)
            .set("file_name", frameFileName(f.index, ".png"))
            .set("width", gt.frame_size.width)
            .set("height", gt.frame_size.height)
            .set("frame_index", f.index);
        images.push(std::move(image));
        for (const TruthBox &b : f.boxes) {
            core::Json a;
            core::Json bbox = core::Json::array();
            bbox.push(b.box.x).push(b.box.y).push(b.box.width).push(b.box.height);
            a.set("id", annotationId++)
                .set("image_id", f.index + 1)
                .set("category_id", 1)
                .set("bbox", std::move(bbox))
                .set("area", b.box.area())
                .set("iscrowd", b.ignore ? 1 : 0)
                .set("segmentation", core::Json::array());
            if (b.id >= 0)
                a.set("track_id", b.id);
            annotations.push(std::move(a));
        }
    }
    doc.set("images", std::move(images)).set("annotations", std::move(annotations));
    core::Json cat;
    cat.set("id", 1).set("name", gt.category).set("supercategory", "");
    doc.set("categories", core::Json::array().push(std::move(cat)));
    writeAtomically(path, doc.dump(1) + "\n");
}

// ---- CVAT for images 1.1 ----------------------------------------------------------------------
// Parsed with libxml2 (Debian's libxml2-dev): a real XML reader with line numbers, no network
// access, no entity expansion.

std::string attribute(xmlNode *node, const char *name, bool *present = nullptr)
{
    xmlChar *v = xmlGetProp(node, reinterpret_cast<const xmlChar *>(name));
    if (present)
        *present = v != nullptr;
    if (!v)
        return {};
    std::string s(reinterpret_cast<const char *>(v));
    xmlFree(v);
    return s;
}

std::string textOf(xmlNode *node)
{
    xmlChar *v = xmlNodeGetContent(node);
    std::string s = v ? reinterpret_cast<const char *>(v) : "";
    xmlFree(v);
    return std::string(trim(s));
}

bool named(xmlNode *node, const char *name)
{
    return node->type == XML_ELEMENT_NODE &&
           xmlStrcmp(node->name, reinterpret_cast<const xmlChar *>(name)) == 0;
}

GroundTruth importCvat(const std::string &path, cv::Size frameSize, int frameCount,
                       const std::string &category)
{
    const std::string text = readFile(path);
    // The first error is the one to report (libxml2 goes on and its last error is often a
    // consequence); a structured handler on this parser's context keeps it, thread-safely.
    struct FirstError
    {
        bool set = false;
        int line = 0;
        std::string message;
    } first;
    std::unique_ptr<xmlParserCtxt, decltype(&xmlFreeParserCtxt)> ctxt(xmlNewParserCtxt(),
                                                                      &xmlFreeParserCtxt);
    if (!ctxt)
        throw std::bad_alloc();
    ctxt->_private = &first;
    ctxt->sax->serror = [](void *userData, xmlErrorPtr error) {
        auto *c = static_cast<xmlParserCtxtPtr>(userData);
        auto *f = static_cast<FirstError *>(c->_private);
        if (f->set || !error || error->level < XML_ERR_ERROR)
            return;
        f->set = true;
        f->line = error->line;
        f->message = error->message ? std::string(trim(error->message)) : "unreadable";
        while (!f->message.empty() && f->message.back() == '\n')
            f->message.pop_back();
    };
    std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)> doc(
        xmlCtxtReadMemory(ctxt.get(), text.data(), int(text.size()), path.c_str(), nullptr,
                          XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING),
        &xmlFreeDoc);
    if (!doc || first.set)
        throw core::FormatError(path + ":" + std::to_string(first.line) +
                                ": malformed XML: " + (first.set ? first.message : "unreadable"));
    xmlNode *root = xmlDocGetRootElement(doc.get());
    auto where = [&](xmlNode *n) { return path + ":" + std::to_string(xmlGetLineNo(n)); };
    auto fail = [&](xmlNode *n, const std::string &what) {
        throw core::FormatError(where(n) + ": <" + reinterpret_cast<const char *>(n->name) + "> " +
                                what);
    };
    if (!root || !named(root, "annotations"))
        throw core::FormatError(path + ": the root element is not <annotations> (CVAT for "
                                       "images 1.1)");
    GroundTruth gt;
    int images = 0, boxes = 0;
    for (xmlNode *n = root->children; n; n = n->next) {
        if (named(n, "version") && textOf(n) != "1.1")
            fail(n, "'" + textOf(n) + "': only CVAT for images 1.1 is read");
        if (named(n, "track"))
            fail(n, "is CVAT for video; export the task as 'CVAT for images 1.1'");
        if (!named(n, "image"))
            continue;
        ++images;
        auto numberAttribute = [&](xmlNode *node, const char *name, bool required,
                                   double fallback) {
            bool present = false;
            const std::string v = attribute(node, name, &present);
            if (!present) {
                if (required)
                    fail(node, std::string("attribute '") + name + "' is missing");
                return fallback;
            }
            double d = 0;
            if (!parseNumber(v, d))
                fail(node, std::string("attribute '") + name + "': '" + v + "' is not a number");
            return d;
        };
        for (const char *key : {"width", "height"}) {
            const double size = numberAttribute(n, key, false, -1);
            const int expected = key[0] == 'w' ? frameSize.width : frameSize.height;
            if (size >= 0 && size != expected)
                fail(n, std::string("attribute '") + key + "': " + num(size, 0) +
                            ", but the video's frames are " + std::to_string(frameSize.width) +
                            "x" + std::to_string(frameSize.height));
        }
        const std::string name = attribute(n, "name");
        int frame = numberInName(name);
        const char *frameField = "name";
        if (frame < 0) {
            frameField = "id";
            const double id = numberAttribute(n, "id", false, -1);
            if (id < 0 || id != std::floor(id))
                fail(n, "attribute 'name': '" + name + "' has no frame number (and no 'id')");
            if (id > 1e9) // an int holds it; no video has more frames (and int(1e129) is UB)
                fail(n, "attribute 'id': " + num(id, 0) + " is not a frame number");
            frame = int(id);
        }
        checkFrame(frame, frameCount, 0, where(n) + ": <image> attribute '" + frameField + "'");
        TruthFrame &f = gt.ensureFrame(frame);
        f.done = true;
        for (xmlNode *c = n->children; c; c = c->next) {
            if (!named(c, "box"))
                continue;
            const std::string label = attribute(c, "label");
            if (label != category && label != kIgnoreLabel)
                fail(c, "attribute 'label': '" + label + "' is not '" + category + "' (nor '" +
                            kIgnoreLabel + "')");
            const double xtl = numberAttribute(c, "xtl", true, 0);
            const double ytl = numberAttribute(c, "ytl", true, 0);
            const double xbr = numberAttribute(c, "xbr", true, 0);
            const double ybr = numberAttribute(c, "ybr", true, 0);
            TruthBox b;
            b.box = checkBox({xtl, ytl, xbr - xtl, ybr - ytl}, frameSize, where(c) + ": <box>",
                             {"xtl", "ytl", "xbr", "ybr"});
            b.ignore = label == kIgnoreLabel;
            for (xmlNode *a = c->children; a; a = a->next)
                if (named(a, "attribute") && attribute(a, "name") == "track_id" &&
                    !parseInteger(textOf(a), b.id))
                    fail(a, "track_id: '" + textOf(a) + "' is not a whole number");
            f.boxes.push_back(b);
            ++boxes;
        }
    }
    gt.note = "imported from " + path + " (CVAT for images 1.1): " + std::to_string(boxes) +
              " boxes on " + std::to_string(images) + " images";
    return gt;
}

std::string xmlEscape(const std::string &s)
{
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

void exportCvat(const GroundTruth &gt, const std::string &path)
{
    std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<annotations>\n"
                      "  <version>1.1</version>\n"
                      "  <!-- EdgeTrain: a box labelled \"ignore\" is neither required nor a "
                      "false detection (too small, mostly hidden). -->\n";
    out += "  <meta>\n    <task>\n      <name>" + xmlEscape(gt.source) + "</name>\n      <size>" +
           std::to_string(gt.frames.size()) + "</size>\n      <labels>\n";
    for (const std::string &label : {gt.category, std::string(kIgnoreLabel)})
        out += "        <label>\n          <name>" + xmlEscape(label) +
               "</name>\n          <type>rectangle</type>\n          <attributes>\n"
               "            <attribute>\n              <name>track_id</name>\n"
               "              <mutable>False</mutable>\n              <input_type>number"
               "</input_type>\n            </attribute>\n          </attributes>\n"
               "        </label>\n";
    out += "      </labels>\n    </task>\n  </meta>\n";
    for (const TruthFrame &f : gt.frames) {
        out += "  <image id=\"" + std::to_string(f.index) + "\" name=\"" +
               frameFileName(f.index, ".png") + "\" width=\"" +
               std::to_string(gt.frame_size.width) + "\" height=\"" +
               std::to_string(gt.frame_size.height) + "\">\n";
        for (const TruthBox &b : f.boxes) {
            out += "    <box label=\"" + xmlEscape(b.ignore ? kIgnoreLabel : gt.category) +
                   "\" source=\"manual\" occluded=\"0\" xtl=\"" + num(b.box.x, 3) + "\" ytl=\"" +
                   num(b.box.y, 3) + "\" xbr=\"" + num(b.box.br().x, 3) + "\" ybr=\"" +
                   num(b.box.br().y, 3) + "\" z_order=\"0\"";
            if (b.id >= 0)
                out += ">\n      <attribute name=\"track_id\">" + std::to_string(b.id) +
                       "</attribute>\n    </box>\n";
            else
                out += "/>\n";
        }
        out += "  </image>\n";
    }
    out += "</annotations>\n";
    writeAtomically(path, out);
}

// ---- YOLO -------------------------------------------------------------------------------------

GroundTruth importYolo(const std::string &path, cv::Size frameSize, int frameCount,
                       const std::string &category)
{
    if (!fs::is_directory(path))
        throw core::IoError("'" + path +
                            "' is not a folder (YOLO: one .txt per frame and "
                            "classes.txt)");
    std::vector<std::string> classes;
    const fs::path classesFile = fs::path(path) / "classes.txt";
    if (fs::exists(classesFile)) {
        const std::string text = readFile(classesFile.string());
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
        const std::string text = readFile(name);
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

void exportYolo(const GroundTruth &gt, const std::string &path)
{
    if (fs::exists(path) && (!fs::is_directory(path) || !fs::is_empty(path)))
        throw core::IoError("'" + path +
                            "' exists and is not an empty folder (YOLO export "
                            "writes one file per frame into a new folder)");
    if (gt.frame_size.width <= 0 || gt.frame_size.height <= 0)
        throw core::Error("YOLO export needs the frame size");
    fs::create_directories(path);
    writeAtomically((fs::path(path) / "classes.txt").string(), gt.category + "\n");
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
        writeAtomically((fs::path(path) / frameFileName(f.index, ".txt")).string(), out);
    }
}

} // namespace

TruthFrame *GroundTruth::frame(int index)
{
    const auto it = std::lower_bound(frames.begin(), frames.end(), index,
                                     [](const TruthFrame &f, int i) { return f.index < i; });
    return it != frames.end() && it->index == index ? &*it : nullptr;
}

const TruthFrame *GroundTruth::frame(int index) const
{
    return const_cast<GroundTruth *>(this)->frame(index);
}

TruthFrame &GroundTruth::ensureFrame(int index)
{
    const auto it = std::lower_bound(frames.begin(), frames.end(), index,
                                     [](const TruthFrame &f, int i) { return f.index < i; });
    if (it != frames.end() && it->index == index)
        return *it;
    TruthFrame f;
    f.index = index;
    return *frames.insert(it, std::move(f));
}

int GroundTruth::doneFrames() const
{
    return int(
        std::count_if(frames.begin(), frames.end(), [](const TruthFrame &f) { return f.done; }));
}

int GroundTruth::boxCount() const
{
    int n = 0;
    for (const TruthFrame &f : frames)
        n += int(f.boxes.size());
    return n;
}

void GroundTruth::merge(const GroundTruth &other)
{
    if (frame_size.area() > 0 && other.frame_size.area() > 0 && frame_size != other.frame_size)
        throw core::Error("the annotations are for " + std::to_string(other.frame_size.width) +
                          "x" + std::to_string(other.frame_size.height) +
                          " frames, the truth for " + std::to_string(frame_size.width) + "x" +
                          std::to_string(frame_size.height));
    if (frame_size.area() == 0)
        frame_size = other.frame_size;
    for (const TruthFrame &f : other.frames)
        ensureFrame(f.index) = f;
}

GroundTruth GroundTruth::doneOnly() const
{
    GroundTruth gt = *this;
    gt.frames.erase(std::remove_if(gt.frames.begin(), gt.frames.end(),
                                   [](const TruthFrame &f) { return !f.done; }),
                    gt.frames.end());
    return gt;
}

core::Json GroundTruth::toJson() const
{
    core::Json j;
    j.set("format", "edgetrain-truth-1").set("source", source).set("category", category);
    j.set("frame_width", frame_size.width).set("frame_height", frame_size.height);
    j.set("note", note);
    core::Json list = core::Json::array();
    for (const TruthFrame &f : frames) {
        core::Json jf;
        jf.set("index", f.index).set("done", f.done);
        core::Json boxes = core::Json::array();
        for (const TruthBox &b : f.boxes) {
            core::Json jb;
            jb.set("x", b.box.x).set("y", b.box.y).set("w", b.box.width).set("h", b.box.height);
            jb.set("ignore", b.ignore).set("id", b.id);
            boxes.push(std::move(jb));
        }
        jf.set("boxes", std::move(boxes));
        list.push(std::move(jf));
    }
    j.set("frames", std::move(list));
    return j;
}

GroundTruth GroundTruth::fromJson(const core::Json &j, const std::string &where)
{
    JsonReader r{where};
    const core::Json *format = j.isObject() ? j.find("format") : nullptr;
    if (!format || !format->isString() || format->toString() != "edgetrain-truth-1")
        r.fail("format", "not an EdgeTrain truth file (format edgetrain-truth-1)");
    GroundTruth gt;
    gt.source = r.text(r.field(j, "(top)", "source"), "source");
    gt.category = r.text(r.field(j, "(top)", "category"), "category");
    if (const core::Json *note = j.find("note"))
        gt.note = r.text(*note, "note");
    gt.frame_size = {int(r.integer(r.field(j, "(top)", "frame_width"), "frame_width")),
                     int(r.integer(r.field(j, "(top)", "frame_height"), "frame_height"))};
    const auto &list = r.array(j, "(top)", "frames");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string p = "frames[" + std::to_string(i) + "]";
        const int index = int(r.integer(r.field(list[i], p, "index"), p + ".index"));
        if (index < 0)
            r.fail(p + ".index", "negative");
        if (gt.frame(index))
            r.fail(p + ".index", "frame " + std::to_string(index) + " appears twice");
        TruthFrame &f = gt.ensureFrame(index);
        const core::Json &done = r.field(list[i], p, "done");
        if (!done.isBool())
            r.fail(p + ".done", "not true/false");
        f.done = done.toBool();
        const auto &boxes = r.array(list[i], p, "boxes");
        for (std::size_t k = 0; k < boxes.size(); ++k) {
            const std::string q = p + ".boxes[" + std::to_string(k) + "]";
            TruthBox b;
            b.box.x = r.number(r.field(boxes[k], q, "x"), q + ".x");
            b.box.y = r.number(r.field(boxes[k], q, "y"), q + ".y");
            b.box.width = r.number(r.field(boxes[k], q, "w"), q + ".w");
            b.box.height = r.number(r.field(boxes[k], q, "h"), q + ".h");
            if (b.box.width <= 0 || b.box.height <= 0)
                r.fail(q, "the box has no area");
            const core::Json &ignore = r.field(boxes[k], q, "ignore");
            if (!ignore.isBool())
                r.fail(q + ".ignore", "not true/false");
            b.ignore = ignore.toBool();
            if (const core::Json *id = boxes[k].find("id"))
                b.id = int(r.integer(*id, q + ".id"));
            f.boxes.push_back(b);
        }
    }
    return gt;
}

void GroundTruth::save(const std::string &sessionDir) const
{
    writeAtomically(sessionDir + "/truth.json", toJson().dump(1) + "\n");
}

GroundTruth GroundTruth::load(const std::string &sessionDir)
{
    const std::string path = sessionDir + "/truth.json";
    return fromJson(core::Json::parse(readFile(path), path), path);
}

bool GroundTruth::exists(const std::string &sessionDir)
{
    return fs::exists(sessionDir + "/truth.json");
}

GroundTruth GroundTruth::importFile(const std::string &path, AnnotationFormat format,
                                    cv::Size frameSize, int frameCount, const std::string &category)
{
    requireFrameSize(frameSize);
    GroundTruth gt;
    switch (format) {
    case AnnotationFormat::Mot:
        gt = importMot(path, frameSize, frameCount);
        break;
    case AnnotationFormat::Coco:
        gt = importCoco(path, frameSize, frameCount, category);
        break;
    case AnnotationFormat::Cvat:
        gt = importCvat(path, frameSize, frameCount, category);
        break;
    case AnnotationFormat::Yolo:
        gt = importYolo(path, frameSize, frameCount, category);
        break;
    }
    gt.category = category;
    gt.frame_size = frameSize;
    return gt;
}

void GroundTruth::exportFile(const std::string &path, AnnotationFormat format) const
{
    switch (format) {
    case AnnotationFormat::Mot:
        exportMot(*this, path);
        break;
    case AnnotationFormat::Coco:
        exportCoco(*this, path);
        break;
    case AnnotationFormat::Cvat:
        exportCvat(*this, path);
        break;
    case AnnotationFormat::Yolo:
        exportYolo(*this, path);
        break;
    }
}

std::string GroundTruth::exportLosses(AnnotationFormat format) const
{
    if (format == AnnotationFormat::Yolo) {
        int ignored = 0;
        for (const TruthFrame &f : frames)
            ignored += int(std::count_if(f.boxes.begin(), f.boxes.end(),
                                         [](const TruthBox &b) { return b.ignore; }));
        if (ignored > 0)
            return "YOLO has no ignore boxes: " + std::to_string(ignored) + " left out";
    }
    if (format == AnnotationFormat::Mot) {
        const int empty = int(std::count_if(frames.begin(), frames.end(),
                                            [](const TruthFrame &f) { return f.boxes.empty(); }));
        if (empty > 0)
            return "MOT cannot list a frame without boxes: " + std::to_string(empty) +
                   " empty frames left out";
    }
    return {};
}

GroundTruth GroundTruth::fromLabels(const LabelResult &labels)
{
    GroundTruth gt;
    gt.source = labels.source;
    gt.frame_size = labels.frame_size;
    gt.note = "the session's accepted tracks (teacher " + labels.teacher + ", tracker " +
              labels.options.tracker + "), not verified";
    int frames = labels.stats.frames;
    for (const Track &t : labels.tracks)
        if (!t.boxes.empty())
            frames = std::max(frames, t.boxes.back().frame + 1);
    gt.frames.resize(std::size_t(std::max(frames, 0)));
    for (int i = 0; i < frames; ++i)
        gt.frames[std::size_t(i)].index = i;
    for (const Track &t : labels.tracks) {
        if (t.state != Track::State::Accepted)
            continue;
        for (const TrackBox &b : t.boxes)
            if (b.frame >= 0)
                gt.frames[std::size_t(b.frame)].boxes.push_back({b.box, false, t.id});
    }
    return gt;
}

} // namespace edgetrain::vision
