#pragma once

#include "app/session/workflow.h"

#include <QImage>
#include <QWidget>

namespace edgetrain::ui {

/** One frame with the labels on it in the palette's styles (BoxStyle): teacher and tracker boxes,
 *  rejected tracks as ignore regions, the selected track thicker and numbered; and, when given,
 *  the student's detections on the frame with its speed in the legend. */
class VideoView : public QWidget
{
    Q_OBJECT

public:
    explicit VideoView(QWidget *parent = nullptr);
    void setFrame(int frame, const QImage &image);
    void setLabels(std::shared_ptr<const vision::LabelResult> labels);
    void setSelectedTrack(int id);
    /** The student's boxes (source pixels) on `frame`, drawn while that frame is shown, and its
     *  detection speed for the legend. */
    void setStudentBoxes(int frame, const QList<QRectF> &boxes, double frames_per_second);
    /** No student boxes any more (the preview was switched off). */
    void clearStudent();
    int studentFrame() const { return m_studentFrame; }
    const QList<QRectF> &studentBoxes() const { return m_studentBoxes; }
    /** No frame to show, and why (a source that cannot be opened). */
    void showProblem(const QString &text);
    const QString &problem() const { return m_problem; }
    int frame() const { return m_frame; }
    QSize sizeHint() const override { return {640, 400}; }

protected:
    void paintEvent(QPaintEvent *) override;

private:
    int m_frame = -1;
    QImage m_image;
    QString m_problem;
    std::shared_ptr<const vision::LabelResult> m_labels;
    int m_selected = -1;
    int m_studentFrame = -1; // -1: no student preview
    QList<QRectF> m_studentBoxes;
    double m_studentFps = 0;
};

/** The tracks over the video's frames, one row each, in the palette's colours: tracker spans,
 *  teacher hits over them, rejected tracks grey, an error-red mark where a tracker error ended a
 *  track. Click a row to
 *  select its track; the current frame is a line. */
class TrackTimeline : public QWidget
{
    Q_OBJECT

public:
    explicit TrackTimeline(QWidget *parent = nullptr);
    void setLabels(std::shared_ptr<const vision::LabelResult> labels, int frames);
    void setFrame(int frame);
    void setSelectedTrack(int id);
    QSize sizeHint() const override;

Q_SIGNALS:
    void trackClicked(int id, int frame);

protected:
    void paintEvent(QPaintEvent *) override;
    void mousePressEvent(QMouseEvent *event) override;

private:
    double x(int frame) const;
    std::shared_ptr<const vision::LabelResult> m_labels;
    std::vector<int> m_order; // track indices by first frame
    int m_frames = 1;
    int m_frame = 0;
    int m_selected = -1;
};

} // namespace edgetrain::ui
