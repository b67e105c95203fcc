// knock-video: the knocked camera of issue 19. Copies a video and, from frame --from on, scales
// every frame about its centre and shifts it (border replicated), as if the camera had been
// knocked; optionally maps MOT Challenge ground truth the same way.
//   knock-video --in vtest.avi --out knocked.avi [--from 480] [--scale 1.1] [--shift 40,24]
//               [--codec ffv1|mjpg] [--map-mot gt.txt --map-out knocked_gt.txt]
// FFV1 (lossless) by default, so a detector sees exactly the transformed pixels; MJPG at
// quality 100 where FFV1 is not available. A box edge e (pixel i spans [i, i+1)) maps to
// scale * (e - size / 2) + size / 2 + shift, clipped to the frame; a box left without area
// is dropped. Exit status 2 with a message naming the file, line and field on bad input.

#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &what)
{
    std::fprintf(stderr, "knock-video: %s\n", what.c_str());
    std::exit(2);
}

struct Knock
{
    int from = 480;
    double scale = 1.1;
    double dx = 40, dy = 24;
    cv::Size size;

    /** For cv::warpAffine: pixel centres at integer coordinates. */
    cv::Mat matrix() const
    {
        const double cx = (size.width - 1) / 2.0, cy = (size.height - 1) / 2.0;
        return (cv::Mat_<double>(2, 3) << scale, 0, (1 - scale) * cx + dx, 0, scale,
                (1 - scale) * cy + dy);
    }
    /** A box in edge coordinates, mapped and clipped. */
    cv::Rect2d map(const cv::Rect2d &b) const
    {
        const double x0 = scale * (b.x - size.width / 2.0) + size.width / 2.0 + dx;
        const double y0 = scale * (b.y - size.height / 2.0) + size.height / 2.0 + dy;
        const cv::Rect2d r(x0, y0, b.width * scale, b.height * scale);
        return r & cv::Rect2d(0, 0, size.width, size.height);
    }
};

double number(const std::string &text, const std::string &where)
{
    char *stop = nullptr;
    const double v = std::strtod(text.c_str(), &stop);
    if (text.empty() || *stop != '\0')
        fail(where + ": '" + text + "' is not a number");
    return v;
}

void mapMot(const Knock &k, const std::string &in, const std::string &out)
{
    std::ifstream src(in);
    if (!src)
        fail("cannot read '" + in + "'");
    std::ofstream dst(out, std::ios::trunc);
    if (!dst)
        fail("cannot write '" + out + "'");
    std::string line;
    int lineNo = 0, mapped = 0, dropped = 0;
    while (std::getline(src, line)) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty())
            continue;
        std::vector<std::string> f;
        std::stringstream ss(line);
        for (std::string item; std::getline(ss, item, ',');)
            f.push_back(item);
        const std::string where = in + ":" + std::to_string(lineNo);
        if (f.size() < 6)
            fail(where + ": expected frame,id,x,y,w,h[,...], got " + std::to_string(f.size()) +
                 " fields");
        const int frame = int(number(f[0], where + " field frame"));
        if (frame < 1)
            fail(where + ": field frame must be >= 1 (MOT frames count from 1), got " + f[0]);
        if (frame - 1 >= k.from) {
            const cv::Rect2d b(number(f[2], where + " field x"), number(f[3], where + " field y"),
                               number(f[4], where + " field w"), number(f[5], where + " field h"));
            const cv::Rect2d m = k.map(b);
            if (m.width <= 0 || m.height <= 0) {
                ++dropped;
                continue;
            }
            char buf[128];
            std::snprintf(buf, sizeof buf, "%.2f,%.2f,%.2f,%.2f", m.x, m.y, m.width, m.height);
            line = f[0] + "," + f[1] + "," + buf;
            for (std::size_t i = 6; i < f.size(); ++i)
                line += "," + f[i];
            ++mapped;
        }
        dst << line << '\n';
    }
    if (!dst.flush())
        fail("cannot write '" + out + "'");
    std::fprintf(stderr, "knock-video: %d boxes mapped, %d left the frame\n", mapped, dropped);
}

} // namespace

int main(int argc, char **argv)
{
    std::string in, out, codec = "ffv1", motIn, motOut;
    Knock k;
    for (int i = 1; i < argc; i += 2) {
        const std::string a = argv[i];
        if (i + 1 >= argc)
            fail(a + " needs a value");
        const std::string v = argv[i + 1];
        if (a == "--in")
            in = v;
        else if (a == "--out")
            out = v;
        else if (a == "--from")
            k.from = int(number(v, "--from"));
        else if (a == "--scale")
            k.scale = number(v, "--scale");
        else if (a == "--shift") {
            const auto comma = v.find(',');
            if (comma == std::string::npos)
                fail("--shift must be DX,DY, got '" + v + "'");
            k.dx = number(v.substr(0, comma), "--shift DX");
            k.dy = number(v.substr(comma + 1), "--shift DY");
        } else if (a == "--codec")
            codec = v;
        else if (a == "--map-mot")
            motIn = v;
        else if (a == "--map-out")
            motOut = v;
        else
            fail("unknown option " + a);
    }
    if (in.empty() || out.empty() || k.scale <= 0 || k.from < 0 ||
        (codec != "ffv1" && codec != "mjpg") || motIn.empty() != motOut.empty())
        fail("usage: knock-video --in FILE --out FILE [--from N] [--scale S] [--shift DX,DY] "
             "[--codec ffv1|mjpg] [--map-mot gt.txt --map-out out.txt]");
    cv::VideoCapture video(in);
    if (!video.isOpened())
        fail("cannot open '" + in + "'");
    cv::Mat frame;
    if (!video.read(frame))
        fail("'" + in + "' has no frames");
    k.size = frame.size();
    const double fps = video.get(cv::CAP_PROP_FPS) > 0 ? video.get(cv::CAP_PROP_FPS) : 25.0;
    // FFV1 through FFmpeg; MJPG through OpenCV's own writer, the one that takes a quality.
    cv::VideoWriter writer;
    if (codec == "ffv1")
        writer.open(out, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('F', 'F', 'V', '1'), fps, k.size);
    else
        writer.open(out, cv::CAP_OPENCV_MJPEG, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps,
                    k.size, {cv::VIDEOWRITER_PROP_QUALITY, 100});
    if (!writer.isOpened())
        fail("cannot write '" + out + "' with codec " + codec);
    const cv::Mat m = k.matrix();
    int index = 0, knocked = 0;
    do {
        if (index >= k.from) {
            cv::Mat moved;
            cv::warpAffine(frame, moved, m, k.size, cv::INTER_LINEAR, cv::BORDER_REPLICATE);
            writer.write(moved);
            ++knocked;
        } else {
            writer.write(frame);
        }
        ++index;
    } while (video.read(frame));
    writer.release();
    std::fprintf(stderr, "knock-video: %d frames written to %s, %d of them knocked\n", index,
                 out.c_str(), knocked);
    if (!motIn.empty())
        mapMot(k, motIn, motOut);
    return 0;
}
