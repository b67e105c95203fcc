#include "datasetpage.h"

#include "app/report/palette.h"
#include "app/session/datasettask.h"
#include "boxstyle.h"
#include "common.h"
#include "gallery.h"
#include "vision/cropdataset.h"
#include "vision/framedataset.h"

#include <QComboBox>
#include <QDir>
#include <QDirIterator>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <functional>

namespace edgetrain::ui {

namespace {

/** One picture of the gallery with its tool tip. */
struct Tile
{
    QImage image;
    QString tip;
};

/** What the frame gallery shows of a split. */
enum class FrameShow { Frames, Copies, Backgrounds };

constexpr int kFrameTileHeight = 168;
constexpr int kMaxTiles = 400;
constexpr int kMaxFrameTiles = 120; // rendered with their boxes: fewer, spread over the split

/** The folder the session's dataset of `kind` is in (or where a build cut short left it). */
QString datasetFolder(const QString &sessionDir, bool frames)
{
    const std::string dir = sessionDir.toStdString();
    return QString::fromStdString(frames ? vision::FrameDataset::folder(dir)
                                         : vision::CropDataset::folder(dir));
}

/** Reads the crop dataset's index.csv and the crops of one split and class (up to `max`). */
QList<Tile> readCrops(const QString &sessionDir, const QString &split, int label, int max)
{
    QList<Tile> crops;
    const QString folder = datasetFolder(sessionDir, false);
    QFile index(folder + QStringLiteral("/index.csv"));
    if (!index.open(QIODevice::ReadOnly))
        return crops;
    index.readLine();
    while (!index.atEnd() && crops.size() < max) {
        const QList<QByteArray> f = index.readLine().trimmed().split(',');
        if (f.size() < 6 || f[2] != split.toUtf8() || f[1].toInt() != label)
            continue;
        QImage image(folder + QLatin1Char('/') + QString::fromUtf8(f[0]));
        if (image.isNull())
            continue;
        crops.append(
            {image.scaled(image.size() * 2, Qt::KeepAspectRatio, Qt::SmoothTransformation),
             QStringLiteral("track %1, frame %2, %3")
                 .arg(QString::fromUtf8(f[3]), QString::fromUtf8(f[4]), QString::fromUtf8(f[5]))});
    }
    return crops;
}

/** Up to `max` samples of the frame dataset's `split` of the kind `show`, spread over it, drawn
 *  with their boxes (Gallery::renderSample). An unreadable index gives none. */
QList<Tile> readFrames(const QString &sessionDir, vision::Split split, FrameShow show, int max)
{
    std::vector<vision::FrameSample> index;
    try {
        index = vision::FrameDataset::index(sessionDir.toStdString());
    } catch (const std::exception &) {
        return {};
    }
    // A training frame's copies follow it in the index, with its frame number.
    std::vector<std::pair<const vision::FrameSample *, bool>> chosen; // sample, is a copy
    int previous = -1;
    for (const vision::FrameSample &s : index) {
        const bool copy = s.frame >= 0 && s.frame == previous;
        previous = s.frame;
        const FrameShow kind = s.frame < 0 ? FrameShow::Backgrounds
                               : copy      ? FrameShow::Copies
                                           : FrameShow::Frames;
        if (s.split == split && kind == show)
            chosen.emplace_back(&s, copy);
    }
    const QString folder = datasetFolder(sessionDir, true);
    QList<Tile> tiles;
    const std::size_t n = std::min(chosen.size(), std::size_t(max));
    for (std::size_t i = 0; i < n; ++i) {
        const auto &[sample, copy] = chosen[i * chosen.size() / n];
        QImage image = Gallery::renderSample(folder, *sample, copy, kFrameTileHeight);
        if (!image.isNull())
            tiles.append({image, QString::fromStdString(sample->file)});
    }
    return tiles;
}

/** The frame dataset's figures as sentences a user reads without the manual. */
QString frameSummary(const vision::FrameDatasetStats &st)
{
    const auto tr = [](const char *text) { return DatasetPage::tr(text); };
    const int copies = std::max(0, st.samples[0] - st.frames[0] - st.backgrounds);
    QString text =
        tr("Training: %1 at %2 × %3 pixels (%4); with %5 and %6, %7 holding %8 and %9.")
            .arg(counted(st.frames[0], tr("frame"), tr("frames")))
            .arg(st.input.width)
            .arg(st.input.height)
            .arg(everyNth(st.every, tr("frame")))
            .arg(counted(copies, tr("jittered or pasted copy"), tr("jittered or pasted copies")))
            .arg(counted(st.backgrounds, tr("background sample"), tr("background samples")))
            .arg(counted(st.samples[0], tr("sample"), tr("samples")))
            .arg(counted(st.objects[0], tr("object"), tr("objects")))
            .arg(counted(st.ignores[0], tr("ignore region"), tr("ignore regions")));
    if (st.pasted > 0)
        text += QLatin1Char(' ') + (st.pasted == 1 ? tr("1 object was pasted where the scene's "
                                                        "ground plane puts it.")
                                                   : tr("%1 objects were pasted where the "
                                                        "scene's ground plane puts them.")
                                                         .arg(st.pasted));
    text += QLatin1Char(' ') +
            tr("Validation: %1 holding %2 and %3.")
                .arg(counted(st.frames[1], tr("frame"), tr("frames")))
                .arg(counted(st.objects[1], tr("object"), tr("objects")))
                .arg(counted(st.ignores[1], tr("ignore region"), tr("ignore regions")));
    if (st.same_object > 0)
        text +=
            QLatin1Char(' ') +
            (st.same_object == 1 ? tr("1 label box became an ignore region")
                                 : tr("%1 label boxes became ignore regions").arg(st.same_object)) +
            tr(": an object boxed twice, or boxes of very different sizes on one spot.");
    return text;
}

void fillRow(QTableWidget *table, int row, const QList<int> &values, bool known)
{
    for (int c = 0; c < values.size(); ++c) {
        auto *item = new QTableWidgetItem(known ? QString::number(values[c]) : QStringLiteral("–"));
        item->setTextAlignment(Qt::AlignCenter);
        table->setItem(row, c, item);
    }
}

} // namespace

DatasetPage::DatasetPage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    QWidget *header = pageHeader(tr("3  Dataset"), QString(), this);
    m_explanation = headerExplanation(header);
    layout->addWidget(header);
    auto *top = new QHBoxLayout;
    auto *left = new QVBoxLayout;
    m_cropSettings = makeCropSettings();
    m_frameSettings = makeFrameSettings();
    left->addWidget(m_frameSettings);
    left->addWidget(m_cropSettings);
    auto *buttons = new QHBoxLayout;
    m_build = new QPushButton(tr("Build dataset"), this);
    m_export = new QPushButton(tr("Export…"), this);
    buttons->addWidget(m_build);
    buttons->addWidget(m_export);
    left->addLayout(buttons);
    left->addStretch(1);
    top->addLayout(left);

    m_counts = new QTableWidget(this);
    m_counts->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_counts->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_counts->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_counts->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_counts->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    auto *right = new QVBoxLayout;
    right->addWidget(m_counts);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    right->addWidget(m_summary);
    m_stale = new QLabel(this);
    m_stale->setStyleSheet(textColour(app::palette::kWarning));
    m_stale->setWordWrap(true);
    m_stale->hide();
    right->addWidget(m_stale);
    right->addStretch(1);
    top->addLayout(right, 1);
    layout->addLayout(top);

    auto *filter = new QHBoxLayout;
    m_split = new QComboBox(this);
    m_class = new QComboBox(this);
    filter->addWidget(new QLabel(tr("Gallery:"), this));
    filter->addWidget(m_split);
    filter->addWidget(m_class);
    filter->addSpacing(12);
    m_legend = new QLabel(this);
    filter->addWidget(m_legend);
    filter->addStretch(1);
    layout->addLayout(filter);
    m_gallery = new QListWidget(this);
    m_gallery->setViewMode(QListView::IconMode);
    m_gallery->setResizeMode(QListView::Adjust);
    m_gallery->setMovement(QListView::Static);
    m_gallery->setSpacing(3);
    m_gallery->setUniformItemSizes(true);
    layout->addWidget(m_gallery, 1);
    layout->addWidget(new TaskStrip(workflow, app::Task::Dataset, this));

    connect(m_build, &QPushButton::clicked, m_workflow, &app::Workflow::startDataset);
    connect(m_export, &QPushButton::clicked, this, &DatasetPage::exportDataset);
    connect(m_split, &QComboBox::currentIndexChanged, this, &DatasetPage::loadGallery);
    connect(m_class, &QComboBox::currentIndexChanged, this, &DatasetPage::loadGallery);
    connect(m_workflow, &app::Workflow::datasetChanged, this, &DatasetPage::refresh);
    // Tracks reviewed after the dataset was built: it no longer says what the labels say.
    connect(m_workflow, &app::Workflow::labelsChanged, this, [this] {
        if (m_workflow->session().hasDataset() && m_loaded) {
            m_stale->setText(
                tr("The tracks changed since this dataset was built: build it again."));
            m_stale->show();
        }
        m_loaded = true;
    });
    connect(m_workflow, &app::Workflow::sessionChanged, this, &DatasetPage::loadSettings);
    connect(m_workflow, &app::Workflow::settingsChanged, this, [this](app::Settings part) {
        if (part == app::Settings::Dataset && !m_storing)
            loadSettings();
    });
    connect(m_workflow, &app::Workflow::taskStarted, this, [this] { m_build->setEnabled(false); });
    connect(m_workflow, &app::Workflow::taskFinished, this,
            [this] { m_build->setEnabled(m_workflow->busy() == app::Task::None); });
    showKind(true);
    loadSettings();
}

QGroupBox *DatasetPage::makeCropSettings()
{
    auto *box = new QGroupBox(tr("Crops"), this);
    auto *form = new QFormLayout(box);
    auto *size = new QHBoxLayout;
    m_width = new QSpinBox(box);
    m_height = new QSpinBox(box);
    m_width->setRange(8, 256);
    m_height->setRange(8, 256);
    m_width->setSuffix(tr(" px"));
    m_height->setSuffix(tr(" px"));
    size->addWidget(m_width);
    size->addWidget(new QLabel(QStringLiteral("×"), box));
    size->addWidget(m_height);
    form->addRow(tr("Size (student input):"), size);
    m_negatives = new QDoubleSpinBox(box);
    m_negatives->setRange(0, 20);
    m_negatives->setSingleStep(0.5);
    form->addRow(tr("Negatives per positive:"), m_negatives);
    connect(m_width, &QSpinBox::valueChanged, this, &DatasetPage::storeSettings);
    connect(m_height, &QSpinBox::valueChanged, this, &DatasetPage::storeSettings);
    connect(m_negatives, &QDoubleSpinBox::valueChanged, this, &DatasetPage::storeSettings);
    return box;
}

QGroupBox *DatasetPage::makeFrameSettings()
{
    auto *box = new QGroupBox(tr("Frames"), this);
    auto *form = new QFormLayout(box);
    // The student's input width is a multiple of 8 (its strides): offered as a list.
    m_frameWidth = new QComboBox(box);
    for (int w : {128, 160, 192, 224, 256, 320, 384, 448, 512, 640})
        m_frameWidth->addItem(tr("%1 px").arg(w), w);
    m_frameWidth->setToolTip(tr("The full-frame student's input width; the height follows the "
                                "video's aspect."));
    form->addRow(tr("Student input width:"), m_frameWidth);
    m_frameEvery = new QSpinBox(box);
    m_frameEvery->setRange(0, 1000);
    m_frameEvery->setPrefix(tr("one in "));
    m_frameEvery->setSpecialValueText(tr("as many as 300 MB hold"));
    m_frameEvery->setToolTip(tr("Neighbouring frames are near copies: one in this many labelled "
                                "frames is kept."));
    form->addRow(tr("Frames kept:"), m_frameEvery);
    m_frameAugment = new QSpinBox(box);
    m_frameAugment->setRange(0, 10);
    m_frameAugment->setToolTip(tr("Extra copies of each training frame: flipped, scaled, shifted, "
                                  "recoloured, or with people pasted in."));
    form->addRow(tr("Copies per training frame:"), m_frameAugment);
    connect(m_frameWidth, &QComboBox::currentIndexChanged, this, &DatasetPage::storeSettings);
    connect(m_frameEvery, &QSpinBox::valueChanged, this, &DatasetPage::storeSettings);
    connect(m_frameAugment, &QSpinBox::valueChanged, this, &DatasetPage::storeSettings);
    return box;
}

bool DatasetPage::frames() const
{
    return m_workflow->session().dataset.kind != QLatin1String("crops");
}

void DatasetPage::storeSettings()
{
    app::DatasetSettings d = m_workflow->session().dataset;
    d.width = m_width->value();
    d.height = m_height->value();
    d.negativesPerPositive = m_negatives->value();
    d.frameWidth = m_frameWidth->currentData().toInt();
    d.frameEvery = m_frameEvery->value();
    d.frameAugment = m_frameAugment->value();
    m_storing = true; // the controls show these values already (and the user may be typing)
    m_workflow->setDatasetSettings(d); // the controls' ranges are the session's
    m_storing = false;
}

void DatasetPage::loadSettings()
{
    m_loaded = false; // a session being opened announces its labels: not an edit
    const app::DatasetSettings &d = m_workflow->session().dataset;
    const QSignalBlocker b1(m_width), b2(m_height), b3(m_negatives), b4(m_frameWidth),
        b5(m_frameEvery), b6(m_frameAugment);
    m_width->setValue(d.width);
    m_height->setValue(d.height);
    m_negatives->setValue(d.negativesPerPositive);
    if (m_frameWidth->findData(d.frameWidth) < 0) // a width set outside the window
        m_frameWidth->addItem(tr("%1 px").arg(d.frameWidth), d.frameWidth);
    m_frameWidth->setCurrentIndex(m_frameWidth->findData(d.frameWidth));
    m_frameEvery->setValue(d.frameEvery);
    m_frameAugment->setValue(d.frameAugment);
    showKind(frames());
    refresh();
}

void DatasetPage::showKind(bool frames)
{
    if (frames == m_framesShown && m_split->count() > 0)
        return;
    m_framesShown = frames;
    m_explanation->setText(
        frames ? tr("Whole labelled frames at the full-frame student's input, with the objects the "
                    "labels found and ignore regions where they are unsure; split into training "
                    "and validation by blocks of time, so neighbouring frames never leak across. "
                    "Training frames also give jittered copies, copies with people pasted in, "
                    "and background samples.")
               : tr("Positive crops from accepted tracks, background and near-miss negatives; "
                    "split into train, validation and test by track, so neighbouring frames never "
                    "leak across."));
    m_frameSettings->setVisible(frames);
    m_cropSettings->setVisible(!frames);

    const QSignalBlocker b1(m_split), b2(m_class);
    m_split->clear();
    m_class->clear();
    m_split->addItem(tr("Training"), int(vision::Split::Train));
    m_split->addItem(tr("Validation"), int(vision::Split::Validation));
    if (frames) {
        m_class->addItem(tr("Frames"), int(FrameShow::Frames));
        m_class->addItem(tr("Jittered and pasted copies"), int(FrameShow::Copies));
        m_class->addItem(tr("Background samples"), int(FrameShow::Backgrounds));
        m_gallery->setIconSize(QSize(kFrameTileHeight * 4 / 3, kFrameTileHeight));
        m_legend->setPixmap(
            BoxStyle::legendPixmap({{app::palette::Source::Tracker, tr("object (from the tracks)")},
                                    {app::palette::Source::Ignore, tr("ignore region")}},
                                   font()));
        m_counts->setColumnCount(5);
        m_counts->setRowCount(2);
        m_counts->setHorizontalHeaderLabels({tr("Frames"), tr("Samples"), tr("Objects"),
                                             tr("Ignore regions"), tr("Pasted objects")});
        m_counts->horizontalHeaderItem(1)->setToolTip(
            tr("What the student trains on: the frames, their jittered and pasted copies and the "
               "background samples"));
        m_counts->horizontalHeaderItem(2)->setToolTip(
            tr("Boxes in all of the split's samples, copies included"));
        m_counts->setVerticalHeaderLabels({tr("Training"), tr("Validation")});
    } else {
        m_split->addItem(tr("Test"), int(vision::Split::Test));
        m_class->addItem(tr("Objects (positives)"), 1);
        m_class->addItem(tr("Background (negatives)"), 0);
        m_gallery->setIconSize(QSize(48, 96));
        m_legend->clear();
        m_counts->setColumnCount(3);
        m_counts->setRowCount(3);
        m_counts->setHorizontalHeaderLabels({tr("Tracks"), tr("Positives"), tr("Negatives")});
        m_counts->setVerticalHeaderLabels({tr("Training"), tr("Validation"), tr("Test")});
    }
}

void DatasetPage::refresh()
{
    m_stale->hide();
    showKind(frames());
    if (frames())
        refreshFrames();
    else
        refreshCrops();
    m_export->setEnabled(m_workflow->session().hasDataset());
    loadGallery();
}

void DatasetPage::refreshCrops()
{
    const auto &stats = m_workflow->session().datasetStats;
    for (int split = 0; split < 3; ++split)
        fillRow(m_counts, split,
                stats ? QList<int>{stats->tracks[split], stats->positives[split],
                                   stats->negatives[split]}
                      : QList<int>{0, 0, 0},
                stats.has_value());
    QString text = stats ? app::DatasetTask::summary(*stats) : QString();
    text.remove(QRegularExpression(QStringLiteral("^dataset: ")));
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    m_summary->setText(text.isEmpty() ? text : text + QLatin1Char('.'));
}

void DatasetPage::refreshFrames()
{
    // Counted from the dataset's index where it is readable: the session keeps fewer figures.
    std::optional<vision::FrameDatasetStats> stats = m_workflow->session().frameStats;
    if (stats) {
        try {
            if (auto counted = vision::FrameDataset::stats(m_workflow->session().dir.toStdString()))
                stats = counted;
        } catch (const std::exception &) {
            // a damaged index: the session's figures
        }
    }
    for (int split = 0; split < 2; ++split)
        fillRow(m_counts, split,
                stats
                    ? QList<int>{stats->frames[split], stats->samples[split], stats->objects[split],
                                 stats->ignores[split], split == 0 ? stats->pasted : 0}
                    : QList<int>{0, 0, 0, 0, 0},
                stats.has_value());
    m_summary->setText(stats ? frameSummary(*stats)
                             : tr("No dataset yet: label the video (step 2), then build it."));
}

void DatasetPage::loadGallery()
{
    const int request = ++m_galleryRequest;
    m_gallery->clear();
    if (!m_workflow->session().hasDataset() || m_split->count() == 0)
        return;
    const QString dir = m_workflow->session().dir;
    const int split = m_split->currentData().toInt();
    const int shown = m_class->currentData().toInt();
    auto read =
        frames()
            ? std::function<QList<Tile>()>([dir, split, shown] {
                  return readFrames(dir, vision::Split(split), FrameShow(shown), kMaxFrameTiles);
              })
            : std::function<QList<Tile>()>([dir, split, shown] {
                  return readCrops(dir,
                                   QString::fromLatin1(vision::splitName(vision::Split(split))),
                                   shown, kMaxTiles);
              });
    (void)QtConcurrent::run(read).then(this, [this, request](const QList<Tile> &tiles) {
        if (request != m_galleryRequest)
            return; // the user chose another split meanwhile
        for (const Tile &t : tiles) {
            auto *item = new QListWidgetItem(QIcon(QPixmap::fromImage(t.image)), QString());
            item->setToolTip(t.tip);
            m_gallery->addItem(item);
        }
    });
}

void DatasetPage::exportDataset()
{
    const QString to = QFileDialog::getExistingDirectory(this, tr("Export the dataset to"));
    if (to.isEmpty())
        return;
    const QString from = datasetFolder(m_workflow->session().dir, frames());
    (void)QtConcurrent::run([from, to] {
        QDirIterator it(from, QDir::Files, QDirIterator::Subdirectories);
        int n = 0;
        while (it.hasNext()) {
            const QString f = it.next();
            const QString target = to + QLatin1Char('/') + QDir(from).relativeFilePath(f);
            QDir().mkpath(QFileInfo(target).absolutePath());
            QFile::remove(target);
            n += QFile::copy(f, target);
        }
        return n;
    }).then(this, [this, to](int n) {
        QMessageBox::information(
            this, tr("Dataset"),
            tr("%1 exported to %2").arg(counted(n, tr("file"), tr("files"))).arg(to));
    });
}

} // namespace edgetrain::ui
