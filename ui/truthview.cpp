#include "truthview.h"

#include "boxstyle.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace edgetrain::ui {

namespace {
using Source = app::palette::Source;
constexpr double kHandle = 5.0;  // half the side of a handle, widget pixels
constexpr double kMinSide = 3.0; // a drawn box smaller than this (image pixels) is a click
constexpr double kClick = 4.0;   // a press that moves less than this (widget pixels) is a click

/** Who proposed a box: a rejected track is drawn as what it becomes in the dataset, an ignore
 *  region. */
Source proposalSource(app::Proposal::Kind kind)
{
    switch (kind) {
    case app::Proposal::Kind::Teacher:
        return Source::Teacher;
    case app::Proposal::Kind::Tracker:
        return Source::Tracker;
    case app::Proposal::Kind::Rejected:
        return Source::Ignore;
    case app::Proposal::Kind::Student:
        return Source::Student;
    }
    return Source::Teacher;
}

/** The eight handles of a box: which edges each one moves, and where it is. */
std::vector<std::pair<int, QPointF>> handles(const QRectF &r)
{
    enum { L = 1, T = 2, R = 4, B = 8 };
    const double cx = r.center().x(), cy = r.center().y();
    return {{L | T, r.topLeft()},    {T, {cx, r.top()}},       {R | T, r.topRight()},
            {R, {r.right(), cy}},    {R | B, r.bottomRight()}, {B, {cx, r.bottom()}},
            {L | B, r.bottomLeft()}, {L, {r.left(), cy}}};
}

} // namespace

TruthView::TruthView(app::Verification *verification, QWidget *parent)
    : QWidget(parent), m_verification(verification)
{
    setMinimumSize(320, 240);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true); // the cursor shows what a press would do
    connect(verification, &app::Verification::truthChanged, this, [this] {
        const vision::TruthFrame *f = truthFrame();
        if (m_selected >= 0 && (!f || m_selected >= int(f->boxes.size())))
            selectBox(-1);
        update();
    });
}

void TruthView::setFrame(int frame, const QImage &image)
{
    if (frame != m_frame) {
        m_drag = Drag::None;
        selectBox(-1);
    }
    m_frame = frame;
    m_image = image;
    update();
}

void TruthView::setProposals(std::vector<app::Proposal> proposals)
{
    m_proposals = std::move(proposals);
    update();
}

void TruthView::selectBox(int index)
{
    if (index == m_selected)
        return;
    m_selected = index;
    update();
    Q_EMIT selectionChanged(index);
}

const vision::TruthFrame *TruthView::truthFrame() const
{
    return m_frame < 0 ? nullptr : m_verification->truth().frame(m_frame);
}

QRectF TruthView::imageRect() const
{
    if (m_image.isNull())
        return {};
    const QSizeF s = QSizeF(m_image.size()).scaled(size(), Qt::KeepAspectRatio);
    return {(width() - s.width()) / 2, (height() - s.height()) / 2, s.width(), s.height()};
}

QPointF TruthView::imageToWidget(const QPointF &image) const
{
    const QRectF r = imageRect();
    if (r.isEmpty())
        return {};
    const double k = r.width() / m_image.width();
    return {r.x() + image.x() * k, r.y() + image.y() * k};
}

QPointF TruthView::widgetToImage(const QPointF &widget) const
{
    const QRectF r = imageRect();
    if (r.isEmpty())
        return {};
    const double k = m_image.width() / r.width();
    return {(widget.x() - r.x()) * k, (widget.y() - r.y()) * k};
}

QRectF TruthView::toWidget(const cv::Rect2d &box) const
{
    return QRectF(imageToWidget({box.x, box.y}),
                  imageToWidget({box.x + box.width, box.y + box.height}));
}

cv::Rect2d TruthView::clampToImage(const cv::Rect2d &box) const
{
    return box & cv::Rect2d(0, 0, m_image.width(), m_image.height());
}

int TruthView::handleAt(const QPointF &widget) const
{
    const vision::TruthFrame *f = truthFrame();
    if (!f || m_selected < 0 || m_selected >= int(f->boxes.size()))
        return 0;
    for (const auto &[edges, at] : handles(toWidget(f->boxes[std::size_t(m_selected)].box)))
        if (std::abs(widget.x() - at.x()) <= kHandle + 1 &&
            std::abs(widget.y() - at.y()) <= kHandle + 1)
            return edges;
    return 0;
}

int TruthView::boxAt(const QPointF &widget) const
{
    const vision::TruthFrame *f = truthFrame();
    if (!f)
        return -1;
    // The selected box first (it is drawn on top), then the smallest box under the cursor: a
    // person inside a bigger box can still be picked.
    if (m_selected >= 0 && m_selected < int(f->boxes.size()) &&
        toWidget(f->boxes[std::size_t(m_selected)].box).contains(widget))
        return m_selected;
    int best = -1;
    for (std::size_t i = 0; i < f->boxes.size(); ++i)
        if (toWidget(f->boxes[i].box).contains(widget) &&
            (best < 0 || f->boxes[i].box.area() < f->boxes[std::size_t(best)].box.area()))
            best = int(i);
    return best;
}

int TruthView::proposalAt(const QPointF &widget) const
{
    int best = -1;
    for (std::size_t i = 0; i < m_proposals.size(); ++i)
        if (toWidget(m_proposals[i].box).contains(widget) &&
            (best < 0 || m_proposals[i].box.area() < m_proposals[std::size_t(best)].box.area()))
            best = int(i);
    return best;
}

cv::Rect2d TruthView::dragged(const QPointF &widget) const
{
    const QPointF p = widgetToImage(widget);
    const double dx = p.x() - m_pressImage.x(), dy = p.y() - m_pressImage.y();
    const double w = m_image.width(), h = m_image.height();
    switch (m_drag) {
    case Drag::Move: { // the whole box stays in the frame
        const double x = std::clamp(m_start.x + dx, 0.0, std::max(0.0, w - m_start.width));
        const double y = std::clamp(m_start.y + dy, 0.0, std::max(0.0, h - m_start.height));
        return {x, y, m_start.width, m_start.height};
    }
    case Drag::Resize: {
        double x0 = m_start.x, y0 = m_start.y, x1 = m_start.x + m_start.width,
               y1 = m_start.y + m_start.height;
        if (m_edges & Left)
            x0 += dx;
        if (m_edges & Right)
            x1 += dx;
        if (m_edges & Top)
            y0 += dy;
        if (m_edges & Bottom)
            y1 += dy;
        return clampToImage(
            {std::min(x0, x1), std::min(y0, y1), std::abs(x1 - x0), std::abs(y1 - y0)});
    }
    case Drag::Draw:
    case Drag::Proposal:
        return clampToImage({std::min(m_pressImage.x(), p.x()), std::min(m_pressImage.y(), p.y()),
                             std::abs(dx), std::abs(dy)});
    case Drag::None:
        break;
    }
    return {};
}

void TruthView::mousePressEvent(QMouseEvent *event)
{
    setFocus(Qt::MouseFocusReason);
    if (event->button() != Qt::LeftButton || m_image.isNull() || m_frame < 0)
        return;
    const QPointF at = event->position();
    m_pressWidget = at;
    m_pressImage = widgetToImage(at);
    m_moved = false;
    const vision::TruthFrame *f = truthFrame();
    if (const int edges = handleAt(at)) {
        m_drag = Drag::Resize;
        m_edges = edges;
        m_start = f->boxes[std::size_t(m_selected)].box;
    } else if (const int box = boxAt(at); box >= 0) {
        selectBox(box);
        m_drag = Drag::Move;
        m_start = f->boxes[std::size_t(box)].box;
    } else {
        selectBox(-1);
        m_proposal = proposalAt(at);
        m_drag = m_proposal >= 0 ? Drag::Proposal : Drag::Draw;
        m_start = {};
    }
    m_preview = m_start;
    update();
}

void TruthView::mouseMoveEvent(QMouseEvent *event)
{
    const QPointF at = event->position();
    if (m_drag == Drag::None) {
        const int edges = handleAt(at);
        const bool diagonal = edges == (Left | Top) || edges == (Right | Bottom);
        setCursor(edges == 0 ? (boxAt(at) >= 0 ? Qt::SizeAllCursor : Qt::CrossCursor)
                  : edges == Left || edges == Right ? Qt::SizeHorCursor
                  : edges == Top || edges == Bottom ? Qt::SizeVerCursor
                  : diagonal                        ? Qt::SizeFDiagCursor
                                                    : Qt::SizeBDiagCursor);
        return;
    }
    if (QLineF(at, m_pressWidget).length() >= kClick)
        m_moved = true;
    if (m_drag == Drag::Proposal && m_moved)
        m_drag = Drag::Draw; // dragging over a proposal draws a box of one's own
    m_preview = dragged(at);
    update();
}

void TruthView::mouseReleaseEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton || m_drag == Drag::None)
        return;
    if (QLineF(event->position(), m_pressWidget).length() >= kClick)
        m_moved = true;
    if (m_drag == Drag::Proposal && m_moved)
        m_drag = Drag::Draw;
    const cv::Rect2d box = m_moved ? dragged(event->position()) : m_start;
    const Drag drag = m_drag;
    m_drag = Drag::None;
    switch (drag) {
    case Drag::Move:
    case Drag::Resize:
        if (m_moved && box.width >= kMinSide && box.height >= kMinSide)
            m_verification->setBox(m_frame, m_selected, box); // one command for the whole drag
        break;
    case Drag::Draw:
        if (m_moved && box.width >= kMinSide && box.height >= kMinSide) {
            m_verification->addBox(m_frame, box);
            selectBox(int(truthFrame()->boxes.size()) - 1);
        }
        break;
    case Drag::Proposal:
        if (m_proposal >= 0 && m_proposal < int(m_proposals.size())) {
            const cv::Rect2d p = clampToImage(m_proposals[std::size_t(m_proposal)].box);
            if (m_verification->acceptProposals(m_frame, {p}) > 0)
                selectBox(int(truthFrame()->boxes.size()) - 1);
        }
        break;
    case Drag::None:
        break;
    }
    update();
}

void TruthView::acceptAll()
{
    std::vector<cv::Rect2d> boxes;
    for (const app::Proposal &p : m_proposals)
        if (p.kind != app::Proposal::Kind::Rejected)
            boxes.push_back(clampToImage(p.box));
    m_verification->acceptProposals(m_frame, boxes);
}

void TruthView::keyPressEvent(QKeyEvent *event)
{
    const bool ctrl = event->modifiers() & Qt::ControlModifier;
    const bool shift = event->modifiers() & Qt::ShiftModifier;
    const vision::TruthFrame *f = truthFrame();
    const bool hasSelection = f && m_selected >= 0 && m_selected < int(f->boxes.size());
    switch (event->key()) {
    case Qt::Key_Z:
        if (!ctrl)
            break;
        shift ? m_verification->undoStack()->redo() : m_verification->undoStack()->undo();
        return;
    case Qt::Key_Y:
        if (!ctrl)
            break;
        m_verification->undoStack()->redo();
        return;
    case Qt::Key_N:
    case Qt::Key_Right:
        Q_EMIT nextFrameRequested();
        return;
    case Qt::Key_P:
    case Qt::Key_Left:
        Q_EMIT previousFrameRequested();
        return;
    case Qt::Key_Delete:
    case Qt::Key_Backspace:
        if (hasSelection)
            m_verification->removeBox(m_frame, m_selected);
        return;
    case Qt::Key_I:
        if (hasSelection)
            m_verification->setIgnore(m_frame, m_selected,
                                      !f->boxes[std::size_t(m_selected)].ignore);
        return;
    case Qt::Key_A:
        if (m_frame >= 0 && !m_image.isNull())
            acceptAll();
        return;
    case Qt::Key_D:
        if (m_frame >= 0)
            Q_EMIT doneRequested();
        return;
    case Qt::Key_Escape:
        selectBox(-1);
        return;
    default:
        break;
    }
    QWidget::keyPressEvent(event);
}

void TruthView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.fillRect(rect(), QColor(24, 24, 24));
    if (m_image.isNull()) {
        p.setPen(QColor(200, 200, 200));
        p.drawText(rect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("No frame: pick frames to verify"));
        return;
    }
    const QRectF target = imageRect();
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.drawImage(target, m_image);
    p.setRenderHint(QPainter::Antialiasing);
    QFont font = this->font();
    font.setPixelSize(11);
    font.setBold(true);
    p.setFont(font);

    p.setBrush(Qt::NoBrush);
    for (const app::Proposal &prop : m_proposals) {
        p.setPen(BoxStyle::pen(proposalSource(prop.kind), 1.6));
        p.drawRect(toWidget(prop.box));
    }

    const vision::TruthFrame *f = truthFrame();
    const std::size_t n = f ? f->boxes.size() : 0;
    for (std::size_t i = 0; i < n; ++i) {
        const vision::TruthBox &b = f->boxes[i];
        const bool selected = int(i) == m_selected;
        const bool dragging =
            selected && (m_drag == Drag::Move || m_drag == Drag::Resize) && m_moved;
        const QRectF r = toWidget(dragging ? m_preview : b.box);
        p.setPen(BoxStyle::pen(b.ignore ? Source::Ignore : Source::Truth, selected ? 3.0 : 2.0));
        p.setBrush(b.ignore ? BoxStyle::ignoreBrush() : QBrush(Qt::NoBrush));
        p.drawRect(r);
        if (selected) {
            p.setPen(QPen(Qt::black, 1));
            p.setBrush(Qt::white);
            for (const auto &[edges, at] : handles(r))
                p.drawRect(QRectF(at.x() - kHandle, at.y() - kHandle, 2 * kHandle, 2 * kHandle));
        }
    }
    if (m_drag == Drag::Draw && m_moved) {
        QPen pen = BoxStyle::pen(Source::Truth, 2.0);
        pen.setStyle(Qt::DashLine); // not a box yet
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawRect(toWidget(m_preview));
    }

    // Legend and the frame's state
    const QString state =
        f && f->done ? tr("frame %1 · done").arg(m_frame) : tr("frame %1").arg(m_frame);
    BoxStyle::drawLegend(p, target.topLeft() + QPointF(6, 6),
                         {{Source::Teacher, {}},
                          {Source::Tracker, {}},
                          {Source::Student, {}},
                          {Source::Truth, {}},
                          {Source::Ignore, tr("ignore / rejected")}},
                         state);
}

} // namespace edgetrain::ui
