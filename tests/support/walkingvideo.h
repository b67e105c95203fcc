#pragma once
// A small drawn video with known ground truth, for the ui suites (tst_verify, tst_report).

#include <QString>
#include <QTest>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

namespace edgetrain::tests {

constexpr int kWalkingFrames = 60;
inline const cv::Size kWalkingSize(320, 240);

/** A grey scene where a white "person" (20 x 50 px) walks right by 3 px a frame. */
inline cv::Rect2d walkingPersonAt(int frame)
{
    return {20.0 + 3 * frame, 100.0, 20.0, 50.0};
}

/** Writes that scene (MJPG, 25 fps); a QVERIFY failure if it cannot be written. */
inline void writeWalkingVideo(const QString &path)
{
    cv::VideoWriter writer(path.toStdString(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 25,
                           kWalkingSize);
    QVERIFY2(writer.isOpened(), "cannot write the test video");
    for (int i = 0; i < kWalkingFrames; ++i) {
        cv::Mat frame(kWalkingSize, CV_8UC3, cv::Scalar(90, 90, 90));
        cv::rectangle(frame, cv::Rect(walkingPersonAt(i)), cv::Scalar(240, 240, 240), cv::FILLED);
        writer.write(frame);
    }
}

} // namespace edgetrain::tests
