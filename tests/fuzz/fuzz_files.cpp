// libFuzzer target for the files EdgeTrain reads that a user, a colleague or another tool may
// have written: weights (safetensors), IDX datasets, model specs (JSON), a session's
// session.json (and its metrics.csv and progress.csv), labels.json, truth.json, the crop index
// (index.csv) and the frame index (frames/index.json). The first byte picks the parser, the rest
// is the file. A parser returns its value or throws an exception with a message (Session::open:
// nothing and a message); anything else is a finding. The indexes name images: a few small ones
// are there (dataset/train/pos/a.png and dataset/train/neg/b.png, 4x8; frames/000000.png, 8x6), so
// an index that names them gets past the image reads.
//
//   build/fuzz/bin/fuzz_files -max_total_time=300 /tmp/corpus-files tests/fuzz/corpus/files

#include "app/session/session.h"
#include "core/error.h"
#include "core/idxfile.h"
#include "core/json.h"
#include "core/modelspec.h"
#include "core/safetensors.h"
#include "fuzzinput.h"
#include "vision/cropdataset.h"
#include "vision/framedataset.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"

#include <opencv2/imgcodecs.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>

using namespace edgetrain;

namespace {

/** The images the seed indexes name, written once per process. */
void writeImages(const std::string &dir)
{
    static const bool written = [&] {
        const cv::Mat crop(8, 4, CV_8UC3, cv::Scalar(40, 120, 200));
        for (const char *name : {"dataset/train/pos/a.png", "dataset/train/neg/b.png"}) {
            std::filesystem::create_directories(
                std::filesystem::path(dir + "/" + name).parent_path());
            cv::imwrite(dir + "/" + name, crop);
        }
        std::filesystem::create_directories(dir + "/frames");
        cv::imwrite(dir + "/frames/000000.png", cv::Mat(6, 8, CV_8UC3, cv::Scalar(90, 90, 90)));
        return true;
    }();
    (void)written;
}

/** A session whose session.json is valid, for fuzzing its CSV files. */
const QString &csvSession()
{
    static const QString dir = [] {
        app::Session s;
        s.dir = QString::fromStdString(fuzz::folder().string() + "/csv-session");
        QString error;
        if (!s.save(&error))
            throw std::runtime_error(error.toStdString());
        return s.dir;
    }();
    return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    std::uint8_t which = 0;
    if (!fuzz::takeSelector(data, size, &which))
        return 0;
    const std::string dir = fuzz::folder().string() + "/session";
    writeImages(dir);
    try {
        switch (which % 9) {
        case 0:
            (void)core::Safetensors::read(fuzz::write("weights.safetensors", data, size));
            break;
        case 1:
            (void)core::IdxFile::read(fuzz::write("data.idx", data, size));
            break;
        case 2:
            (void)core::ModelSpec::fromJson(
                core::Json::parse(std::string(reinterpret_cast<const char *>(data), size), "spec"),
                "spec");
            break;
        case 3: {
            fuzz::write("session/session.json", data, size);
            QString error;
            (void)app::Session::open(QString::fromStdString(dir), &error);
            break;
        }
        case 4:
            fuzz::write("session/labels.json", data, size);
            (void)vision::LabelResult::load(dir);
            break;
        case 5:
            fuzz::write("session/truth.json", data, size);
            (void)vision::GroundTruth::load(dir);
            break;
        case 6:
            fuzz::write("session/dataset/index.csv", data, size);
            (void)vision::CropDataset::load(dir, vision::Split::Train);
            break;
        case 7:
            fuzz::write("session/frames/index.json", data, size);
            (void)vision::FrameDataset::load(dir, vision::Split::Train, 32);
            break;
        case 8: { // metrics.csv, a NUL, progress.csv
            const auto *nul = static_cast<const std::uint8_t *>(std::memchr(data, 0, size));
            const std::size_t first = nul ? std::size_t(nul - data) : size;
            const QString &session = csvSession(); // first: its save() writes empty CSV files
            fuzz::write("csv-session/metrics.csv", data, first);
            fuzz::write("csv-session/progress.csv", nul ? nul + 1 : data + size,
                        nul ? size - first - 1 : 0);
            QString error;
            (void)app::Session::open(session, &error);
            break;
        }
        }
    } catch (const std::exception &) {
        // refused with a message: what bad input should get
    }
    return 0;
}
