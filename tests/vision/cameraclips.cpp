// camera-clips: the cameras of issue 45, made from the videos Debian ships. Writes one clip
// per camera property into OUT, each a variant of the first frames of --in:
//   fps2.avi, fps5.avi   every 5th / 2nd frame (a 2 and a 5 frames/s camera of a 10 frames/s
//                        scene), fps30.avi every frame three times (30 frames/s)
//   size320x240.avi, size1920x1080.avi, portrait.avi (a 3:4 upright crop of the middle)
//   grey.avi             single-channel frames
//   short.avi            10 frames
//   frozen-black.avi     a stretch where the picture freezes, then a black stretch
//   folder/              PNG images, one of them not an image at all
//   ends-early.avi       a file cut off half-way (the camera gone mid-run: its header promises
//                        more frames than there are)
//   camera-clips --in vtest.avi --out DIR [--frames 240]
// MJPG through FFmpeg (OpenCV's own MJPG writer asserts on some frames): every OpenCV build
// reads it. Exit status 2 with a message on
// bad arguments, 1 when a clip cannot be written.

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &what, int status)
{
    std::fprintf(stderr, "camera-clips: %s\n", what.c_str());
    std::exit(status);
}

void writeClip(const std::string &path, const std::vector<cv::Mat> &frames, double fps,
               bool colour = true)
{
    if (frames.empty())
        fail("no frames for " + path, 1);
    cv::VideoWriter out(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps,
                        frames.front().size(), {cv::VIDEOWRITER_PROP_IS_COLOR, colour ? 1 : 0});
    if (!out.isOpened())
        fail("cannot write " + path, 1);
    for (const cv::Mat &f : frames)
        out.write(f);
}

std::vector<cv::Mat> mapped(const std::vector<cv::Mat> &frames,
                            const std::function<cv::Mat(const cv::Mat &)> &f)
{
    std::vector<cv::Mat> out;
    out.reserve(frames.size());
    for (const cv::Mat &m : frames)
        out.push_back(f(m));
    return out;
}

} // namespace

int main(int argc, char **argv)
{
    std::string in, dir;
    int count = 240;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc)
            fail("usage: camera-clips --in VIDEO --out DIR [--frames N]", 2);
        if (a == "--in")
            in = argv[++i];
        else if (a == "--out")
            dir = argv[++i];
        else if (a == "--frames")
            count = std::atoi(argv[++i]);
        else
            fail("unknown option '" + a + "'", 2);
    }
    if (in.empty() || dir.empty() || count < 30)
        fail("usage: camera-clips --in VIDEO --out DIR [--frames N >= 30]", 2);
    cv::VideoCapture cap(in);
    if (!cap.isOpened())
        fail("cannot open " + in, 2);
    const double fps = cap.get(cv::CAP_PROP_FPS) > 0 ? cap.get(cv::CAP_PROP_FPS) : 10.0;
    std::vector<cv::Mat> frames;
    for (cv::Mat f; int(frames.size()) < count && cap.read(f) && !f.empty();)
        frames.push_back(f.clone());
    if (int(frames.size()) < 30)
        fail(in + " has fewer than 30 frames", 2);
    std::filesystem::create_directories(dir);
    const std::string d = dir + "/";

    auto every = [&](std::size_t k) {
        std::vector<cv::Mat> out;
        for (std::size_t i = 0; i < frames.size(); i += k)
            out.push_back(frames[i]);
        return out;
    };
    writeClip(d + "fps2.avi", every(5), fps / 5);
    writeClip(d + "fps5.avi", every(2), fps / 2);
    std::vector<cv::Mat> triple;
    for (std::size_t i = 0; i < frames.size() / 3; ++i)
        triple.insert(triple.end(), 3, frames[i]);
    writeClip(d + "fps30.avi", triple, fps * 3);

    const auto resized = [&](cv::Size s) {
        return mapped(frames, [s](const cv::Mat &m) {
            cv::Mat r;
            cv::resize(m, r, s, 0, 0, cv::INTER_AREA);
            return r;
        });
    };
    writeClip(d + "size320x240.avi", resized({320, 240}), fps);
    std::vector<cv::Mat> large(frames.begin(), frames.begin() + std::ptrdiff_t(frames.size() / 2));
    writeClip(d + "size1920x1080.avi",
              mapped(large,
                     [](const cv::Mat &m) {
                         cv::Mat r;
                         cv::resize(m, r, {1920, 1080}, 0, 0, cv::INTER_CUBIC);
                         return r;
                     }),
              fps);
    writeClip(d + "portrait.avi",
              mapped(frames,
                     [](const cv::Mat &m) {
                         const int w = m.rows * 3 / 4;
                         return m(cv::Rect((m.cols - w) / 2, 0, w, m.rows)).clone();
                     }),
              fps);
    writeClip(d + "grey.avi",
              mapped(frames,
                     [](const cv::Mat &m) {
                         cv::Mat g;
                         cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
                         return g;
                     }),
              fps, false);
    writeClip(d + "short.avi", std::vector<cv::Mat>(frames.begin(), frames.begin() + 10), fps);

    // Frozen from a third of the way, black from half-way, for a sixth of the clip each.
    std::vector<cv::Mat> stretches = frames;
    const std::size_t n = stretches.size(), third = n / 3, half = n / 2, sixth = n / 6;
    for (std::size_t i = third; i < third + sixth; ++i)
        stretches[i] = frames[third];
    for (std::size_t i = half; i < half + sixth; ++i)
        stretches[i] = cv::Mat::zeros(frames[0].size(), frames[0].type());
    writeClip(d + "frozen-black.avi", stretches, fps);

    const std::string folder = d + "folder";
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    const std::size_t images = std::min<std::size_t>(frames.size(), 60);
    for (std::size_t i = 0; i < images; ++i) {
        char name[64];
        std::snprintf(name, sizeof name, "/frame_%04zu.png", i);
        if (i == images / 2) { // a file named as an image that is not one
            std::ofstream(folder + name) << "not a PNG: the card was pulled while writing\n";
            continue;
        }
        if (!cv::imwrite(folder + name, frames[i]))
            fail("cannot write " + folder + name, 1);
    }

    // Written whole, then cut: the index at the end of the AVI is gone, the data stops half-way.
    const std::string early = d + "ends-early.avi";
    writeClip(early, frames, fps);
    std::filesystem::resize_file(early, std::filesystem::file_size(early) / 2);
    std::printf("camera-clips: %zu frames of %s into %s\n", frames.size(), in.c_str(), dir.c_str());
    return 0;
}
