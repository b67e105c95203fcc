#include "videoview.h"

#include "boxstyle.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace edgetrain::ui {

namespace {
constexpr int kRow = 7, kGap = 2, kTop = 4;
using Source = app::palette::Source;
/** A rejected track is drawn as what it becomes in the dataset, an ignore region. */
const QColor kTeacher = app::palette::onLight(Source::Teacher),
             kTracker = app::palette::onLight(Source::Tracker),
             kRejected = app::palette::onLight(Source::Ignore), kFailure = app::palette::kError;
} // namespace

VideoView::VideoView(QWidget *parent) : QWidget(parent)
{
    setMinimumSize(320, 200);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void VideoView::setFrame(int frame, const QImage &image)
{
    m_frame = frame;
    m_image = image;
    m_problem.clear();
    update();
}

void VideoView::showProblem(const QString &text)
{
    m_image = QImage();
    m_problem = text;
    update();
}

void VideoView::setLabels(std::shared_ptr<const vision::LabelResult> labels)
{
    m_labels = std::move(labels);
    update();
}

void VideoView::setSelectedTrack(int id)
{
    m_selected = id;
    update();
}

void VideoView::setStudentBoxes(int frame, const QList<QRectF> &boxes, double frames_per_second)
{
    m_studentFrame = frame;
    m_studentBoxes = boxes;
    m_studentFps = frames_per_second;
    update();
}

void VideoView::clearStudent()
{
    m_studentFrame = -1;
    m_studentBoxes.clear();
    m_studentFps = 0;
    update();
}

void VideoView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.fillRect(rect(), QColor(24, 24, 24));
    if (m_image.isNull()) {
        p.setPen(QColor(200, 200, 200));
        p.drawText(rect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap,
                   m_problem.isEmpty() ? tr("No frame: choose a source") : m_problem);
        return;
    }
    const QSizeF s = QSizeF(m_image.size()).scaled(size(), Qt::KeepAspectRatio);
    const QRectF target((width() - s.width()) / 2, (height() - s.height()) / 2, s.width(),
                        s.height());
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.drawImage(target, m_image);
    const double k = target.width() / m_image.width();
    p.setRenderHint(QPainter::Antialiasing);
    const bool student = m_studentFrame >= 0;
    if (student && m_studentFrame == m_frame) {
        p.setPen(BoxStyle::pen(Source::Student, 2.0));
        for (const QRectF &b : m_studentBoxes)
            p.drawRect(QRectF(target.x() + b.x() * k, target.y() + b.y() * k, b.width() * k,
                              b.height() * k));
    }
    if (!m_labels && !student)
        return;
    QFont f = font();
    f.setPixelSize(11);
    f.setBold(true);
    p.setFont(f);
    static const std::vector<vision::Track> none;
    for (const vision::Track &t : m_labels ? m_labels->tracks : none) {
        const vision::TrackBox *b = t.at(m_frame);
        if (!b)
            continue;
        const QRectF r(target.x() + b->box.x * k, target.y() + b->box.y * k, b->box.width * k,
                       b->box.height * k);
        const bool rejected = t.state == vision::Track::State::Rejected;
        const bool teacher = b->source == vision::BoxSource::Teacher;
        p.setPen(BoxStyle::pen(rejected  ? Source::Ignore
                               : teacher ? Source::Teacher
                                         : Source::Tracker,
                               t.id == m_selected ? 3.0 : 1.8));
        p.drawRect(r);
        p.drawText(r.topLeft() + QPointF(2, -3), QStringLiteral("#%1").arg(t.id));
    }
    // Legend
    QList<BoxStyle::Key> keys{{Source::Teacher, {}}, {Source::Tracker, {}}};
    if (m_labels)
        keys.append({Source::Ignore, tr("rejected")});
    if (student)
        keys.append({Source::Student, m_studentFps > 0
                                          ? tr("student · %1 frames/s").arg(m_studentFps, 0, 'f', 0)
                                          : QString()});
    BoxStyle::drawLegend(p, QPointF(8, 8), keys, tr("frame %1").arg(m_frame));
}

TrackTimeline::TrackTimeline(QWidget *parent) : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setMinimumHeight(40);
}

void TrackTimeline::setLabels(std::shared_ptr<const vision::LabelResult> labels, int frames)
{
    m_labels = std::move(labels);
    m_frames = std::max(frames, 1);
    m_order.clear();
    if (m_labels) {
        for (std::size_t i = 0; i < m_labels->tracks.size(); ++i)
            if (!m_labels->tracks[i].boxes.empty())
                m_order.push_back(int(i));
        std::sort(m_order.begin(), m_order.end(), [&](int a, int b) {
            return m_labels->tracks[std::size_t(a)].boxes.front().frame <
                   m_labels->tracks[std::size_t(b)].boxes.front().frame;
        });
        m_frames = std::max(m_frames, m_labels->stats.frames);
    }
    setFixedHeight(sizeHint().height());
    update();
}

void TrackTimeline::setFrame(int frame)
{
    m_frame = frame;
    update();
}

void TrackTimeline::setSelectedTrack(int id)
{
    m_selected = id;
    update();
}

QSize TrackTimeline::sizeHint() const
{
    return {400, std::max(40, kTop * 2 + int(m_order.size()) * (kRow + kGap))};
}

double TrackTimeline::x(int frame) const
{
    return 4 + (width() - 8) * double(frame) / m_frames;
}

void TrackTimeline::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (!m_labels || m_order.empty()) {
        p.setPen(palette().text().color());
        p.drawText(rect(), Qt::AlignCenter, tr("No tracks yet: run the labelling"));
        return;
    }
    int y = kTop;
    for (int index : m_order) {
        const vision::Track &t = m_labels->tracks[std::size_t(index)];
        const bool rejected = t.state == vision::Track::State::Rejected;
        if (t.id == m_selected)
            p.fillRect(QRectF(0, y - 1, width(), kRow + 2),
                       palette().highlight().color().lighter(160));
        const double x0 = x(t.boxes.front().frame), x1 = x(t.boxes.back().frame + 1);
        p.fillRect(QRectF(x0, y, std::max(1.0, x1 - x0), kRow), rejected ? kRejected : kTracker);
        if (!rejected)
            for (const vision::TrackBox &b : t.boxes)
                if (b.source == vision::BoxSource::Teacher)
                    p.fillRect(
                        QRectF(x(b.frame), y, std::max(1.0, x(b.frame + 1) - x(b.frame)), kRow),
                        kTeacher);
        if (t.failure) // where a tracker error ended (or, backwards, began) this object's run
            p.fillRect(QRectF(x(t.failure->frame) - 1, y - 2, 3, kRow + 4), kFailure);
        y += kRow + kGap;
    }
    p.setPen(QPen(palette().text().color(), 1));
    p.drawLine(QPointF(x(m_frame), 0), QPointF(x(m_frame), height()));
}

void TrackTimeline::mousePressEvent(QMouseEvent *event)
{
    if (!m_labels)
        return;
    const int row = (int(event->position().y()) - kTop) / (kRow + kGap);
    if (row < 0 || row >= int(m_order.size()))
        return;
    const vision::Track &t = m_labels->tracks[std::size_t(m_order[std::size_t(row)])];
    const int frame =
        std::clamp(int((event->position().x() - 4) / std::max(1.0, width() - 8.0) * m_frames),
                   t.boxes.front().frame, t.boxes.back().frame);
    Q_EMIT trackClicked(t.id, frame);
}

} // namespace edgetrain::ui
