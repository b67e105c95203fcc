#include "vision/annotations/cococodec.h"

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "vision/annotations/annotationtext.h"
#include "vision/groundtruth.h"

#include <map>

namespace edgetrain::vision {

using namespace Internal;

GroundTruth CocoCodec::read(const std::string &path, const ImportTarget &target) const
{
    const cv::Size frameSize = target.frame_size;
    const int frameCount = target.frame_count;
    const std::string &category = target.category;
    const core::Json doc = core::Json::parse(core::readFile(path), path);
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

void CocoCodec::write(const GroundTruth &gt, const std::string &path) const
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
    writeTextFile(path, doc.dump(1) + "\n");
}

std::string CocoCodec::losses(const GroundTruth &) const
{
    return {}; // COCO carries every frame, box, ignore flag and track id
}

} // namespace edgetrain::vision
