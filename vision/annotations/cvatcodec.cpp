#include "vision/annotations/cvatcodec.h"

#include "core/error.h"
#include "core/fileio.h"
#include "vision/annotations/annotationtext.h"
#include "vision/groundtruth.h"

#include <cmath>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <memory>
#include <new>

namespace edgetrain::vision {

using namespace Internal;

namespace {

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

} // namespace

GroundTruth CvatCodec::read(const std::string &path, const ImportTarget &target) const
{
    const cv::Size frameSize = target.frame_size;
    const int frameCount = target.frame_count;
    const std::string &category = target.category;
    const std::string text = core::readFile(path);
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

void CvatCodec::write(const GroundTruth &gt, const std::string &path) const
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
    writeTextFile(path, out);
}

std::string CvatCodec::losses(const GroundTruth &) const
{
    return {}; // every frame is an <image>; "ignore" is a label, the id an attribute
}

} // namespace edgetrain::vision
