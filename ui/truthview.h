#pragma once

#include "app/session/verification.h"

#include <QImage>
#include <QWidget>

namespace edgetrain::ui {

/**
 * The Verify step's editor: one frame with the proposals in the palette's styles (BoxStyle:
 * teacher, tracker, student; rejected tracks as ignore regions) and the verified boxes over them
 * (ignore boxes hatched), the selected one with eight handles.
 *
 * Mouse: press on a truth box selects it and drags it; on a handle of the selected box resizes
 * it; a click on a proposal accepts it into the truth; a drag anywhere else draws a new box.
 * Keys: N / Right, P / Left next / previous frame (signals), Delete removes the selected box, I
 * toggles its ignore flag, A accepts all proposals, D asks to mark the frame done, Ctrl+Z /
 * Ctrl+Shift+Z (or Ctrl+Y) undo / redo. Every change goes to the Verification as one command,
 * made when the mouse is released. Image coordinates are source pixels; the frame is scaled to
 * fit the widget, keeping its aspect.
 */
class TruthView : public QWidget
{
    Q_OBJECT

public:
    explicit TruthView(app::Verification *verification, QWidget *parent = nullptr);

    /** Shows `image` as frame `frame` (the selection is cleared when the frame changes). */
    void setFrame(int frame, const QImage &image);
    void setProposals(std::vector<app::Proposal> proposals);
    int frame() const { return m_frame; }
    bool hasImage() const { return !m_image.isNull(); }
    const std::vector<app::Proposal> &proposals() const { return m_proposals; }

    /** Index of the selected truth box on this frame, -1 for none. */
    int selectedBox() const { return m_selected; }
    void selectBox(int index);

    /** Where the frame is drawn, in widget coordinates (empty without a frame). */
    QRectF imageRect() const;
    QPointF imageToWidget(const QPointF &image) const;
    QPointF widgetToImage(const QPointF &widget) const;

    QSize sizeHint() const override { return {800, 600}; }

Q_SIGNALS:
    void nextFrameRequested();
    void previousFrameRequested();
    void doneRequested();
    void selectionChanged(int index);

protected:
    void paintEvent(QPaintEvent *) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;

private:
    enum class Drag { None, Move, Resize, Draw, Proposal };
    enum Edge { Left = 1, Top = 2, Right = 4, Bottom = 8 };
    const vision::TruthFrame *truthFrame() const;
    QRectF toWidget(const cv::Rect2d &box) const;
    cv::Rect2d clampToImage(const cv::Rect2d &box) const;
    int handleAt(const QPointF &widget) const; // edges of the selected box's handle, 0 if none
    int boxAt(const QPointF &widget) const;
    int proposalAt(const QPointF &widget) const;
    cv::Rect2d dragged(const QPointF &widget) const;
    void acceptAll();

    app::Verification *m_verification;
    int m_frame = -1;
    QImage m_image;
    std::vector<app::Proposal> m_proposals;
    int m_selected = -1;

    Drag m_drag = Drag::None;
    int m_edges = 0;      // Resize: which edges move
    int m_proposal = -1;  // Proposal: the one pressed on
    QPointF m_pressImage; // where the drag started, image pixels
    QPointF m_pressWidget;
    cv::Rect2d m_start;   // the box when the drag started
    cv::Rect2d m_preview; // the box as dragged so far
    bool m_moved = false;
};

} // namespace edgetrain::ui
