// libFuzzer target for the ground-truth importers: MOT Challenge gt.txt, COCO JSON, CVAT for
// images XML 1.1 and YOLO (a folder of one .txt per frame and classes.txt; here one frame's file
// and the class list, split at the first NUL byte). The first byte picks the format. An import
// returns a complete GroundTruth or throws with the file, line or element and the field.
//
//   build/fuzz/bin/fuzz_annotations -max_total_time=300 /tmp/corpus-ann
//   tests/fuzz/corpus/annotations

#include "fuzzinput.h"
#include "vision/groundtruth.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>

using namespace edgetrain;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    std::uint8_t which = 0;
    if (!fuzz::takeSelector(data, size, &which))
        return 0;
    try {
        switch (which % 4) {
        case 0:
            (void)vision::GroundTruth::importFile(fuzz::write("gt.txt", data, size),
                                                  vision::AnnotationFormat::Mot, {768, 576}, 800);
            break;
        case 1:
            (void)vision::GroundTruth::importFile(fuzz::write("coco.json", data, size),
                                                  vision::AnnotationFormat::Coco, {768, 576}, 800);
            break;
        case 2:
            (void)vision::GroundTruth::importFile(fuzz::write("cvat.xml", data, size),
                                                  vision::AnnotationFormat::Cvat, {768, 576}, 800);
            break;
        case 3: {
            const auto *nul = static_cast<const std::uint8_t *>(std::memchr(data, 0, size));
            const std::size_t first = nul ? std::size_t(nul - data) : size;
            const std::filesystem::path yolo = fuzz::folder() / "yolo";
            std::filesystem::remove_all(yolo);
            fuzz::write("yolo/frame_000001.txt", data, first);
            if (nul)
                fuzz::write("yolo/classes.txt", nul + 1, size - first - 1);
            (void)vision::GroundTruth::importFile(yolo.string(), vision::AnnotationFormat::Yolo,
                                                  {768, 576}, 800);
            break;
        }
        }
    } catch (const std::exception &) {
        // refused with a message
    }
    return 0;
}
