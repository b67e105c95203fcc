#include "datasetpage.h"

#include "common.h"
#include "vision/cropdataset.h"

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
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace edgetrain::ui {

namespace {

struct Crop
{
    QImage image;
    QString tip;
};

/** The session's crop dataset folder (<session>/dataset, or where a build cut short left it). */
QString cropFolder(const QString &sessionDir)
{
    return QString::fromStdString(vision::CropDataset::folder(sessionDir.toStdString()));
}

/** Reads the dataset's index.csv and the crops of one split and class (up to `max`). */
QList<Crop> readCrops(const QString &sessionDir, const QString &split, int label, int max)
{
    QList<Crop> crops;
    const QString folder = cropFolder(sessionDir);
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

} // namespace

DatasetPage::DatasetPage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("3  Dataset"),
        tr("Positive crops from accepted tracks, background and near-miss negatives; split into "
           "train, validation and test by track, so neighbouring frames never leak across."),
        this));
    auto *top = new QHBoxLayout;
    auto *settings = new QGroupBox(tr("Crops"), this);
    auto *form = new QFormLayout(settings);
    auto *size = new QHBoxLayout;
    m_width = new QSpinBox(settings);
    m_height = new QSpinBox(settings);
    m_width->setRange(8, 256);
    m_height->setRange(8, 256);
    m_width->setSuffix(tr(" px"));
    m_height->setSuffix(tr(" px"));
    size->addWidget(m_width);
    size->addWidget(new QLabel(QStringLiteral("×"), settings));
    size->addWidget(m_height);
    form->addRow(tr("Size (student input):"), size);
    m_negatives = new QDoubleSpinBox(settings);
    m_negatives->setRange(0, 20);
    m_negatives->setSingleStep(0.5);
    form->addRow(tr("Negatives per positive:"), m_negatives);
    auto *buttons = new QHBoxLayout;
    m_build = new QPushButton(tr("Build dataset"), settings);
    m_export = new QPushButton(tr("Export…"), settings);
    buttons->addWidget(m_build);
    buttons->addWidget(m_export);
    form->addRow(buttons);
    top->addWidget(settings);

    m_counts = new QTableWidget(3, 3, this);
    m_counts->setHorizontalHeaderLabels({tr("Tracks"), tr("Positives"), tr("Negatives")});
    m_counts->setVerticalHeaderLabels({tr("Train"), tr("Validation"), tr("Test")});
    m_counts->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_counts->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_counts->setMaximumHeight(130);
    auto *right = new QVBoxLayout;
    right->addWidget(m_counts);
    m_stale = new QLabel(this);
    m_stale->setStyleSheet(QStringLiteral("color: #b06000;"));
    m_stale->setWordWrap(true);
    m_stale->hide();
    right->addWidget(m_stale);
    top->addLayout(right, 1);
    layout->addLayout(top);

    auto *filter = new QHBoxLayout;
    m_split = new QComboBox(this);
    m_split->addItem(tr("Train"), QStringLiteral("train"));
    m_split->addItem(tr("Validation"), QStringLiteral("validation"));
    m_split->addItem(tr("Test"), QStringLiteral("test"));
    m_class = new QComboBox(this);
    m_class->addItem(tr("Objects (positives)"), 1);
    m_class->addItem(tr("Background (negatives)"), 0);
    filter->addWidget(new QLabel(tr("Gallery:"), this));
    filter->addWidget(m_split);
    filter->addWidget(m_class);
    filter->addStretch(1);
    layout->addLayout(filter);
    m_gallery = new QListWidget(this);
    m_gallery->setViewMode(QListView::IconMode);
    m_gallery->setResizeMode(QListView::Adjust);
    m_gallery->setMovement(QListView::Static);
    m_gallery->setIconSize(QSize(48, 96));
    m_gallery->setSpacing(3);
    m_gallery->setUniformItemSizes(true);
    layout->addWidget(m_gallery, 1);
    layout->addWidget(new TaskStrip(workflow, app::Task::Dataset, this));

    auto store = [this] {
        app::DatasetSettings d = m_workflow->session().dataset;
        d.width = m_width->value();
        d.height = m_height->value();
        d.negativesPerPositive = m_negatives->value();
        m_storing = true; // the spin boxes show these values already (and the user may be typing)
        m_workflow->setDatasetSettings(d); // the spin boxes' ranges are the session's
        m_storing = false;
    };
    connect(m_width, &QSpinBox::valueChanged, this, store);
    connect(m_height, &QSpinBox::valueChanged, this, store);
    connect(m_negatives, &QDoubleSpinBox::valueChanged, this, store);
    connect(m_build, &QPushButton::clicked, m_workflow, &app::Workflow::startDataset);
    connect(m_export, &QPushButton::clicked, this, [this] {
        const QString to = QFileDialog::getExistingDirectory(this, tr("Export the dataset to"));
        if (to.isEmpty())
            return;
        const QString from = cropFolder(m_workflow->session().dir);
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
            QMessageBox::information(this, tr("Dataset"),
                                     tr("%1 files exported to %2").arg(n).arg(to));
        });
    });
    connect(m_split, &QComboBox::currentIndexChanged, this, &DatasetPage::loadGallery);
    connect(m_class, &QComboBox::currentIndexChanged, this, &DatasetPage::loadGallery);
    connect(m_workflow, &app::Workflow::datasetChanged, this, &DatasetPage::refresh);
    // Tracks reviewed after the crops were cut: the dataset no longer says what the labels say.
    connect(m_workflow, &app::Workflow::labelsChanged, this, [this] {
        if (m_workflow->session().datasetStats && m_loaded) {
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
    loadSettings();
}

void DatasetPage::loadSettings()
{
    m_loaded = false; // a session being opened announces its labels: not an edit
    const app::DatasetSettings &d = m_workflow->session().dataset;
    const QSignalBlocker b1(m_width), b2(m_height), b3(m_negatives);
    m_width->setValue(d.width);
    m_height->setValue(d.height);
    m_negatives->setValue(d.negativesPerPositive);
    refresh();
}

void DatasetPage::refresh()
{
    m_stale->hide();
    const auto &stats = m_workflow->session().datasetStats;
    for (int split = 0; split < 3; ++split) {
        const int values[3] = {stats ? stats->tracks[split] : 0,
                               stats ? stats->positives[split] : 0,
                               stats ? stats->negatives[split] : 0};
        for (int c = 0; c < 3; ++c) {
            auto *item =
                new QTableWidgetItem(stats ? QString::number(values[c]) : QStringLiteral("–"));
            item->setTextAlignment(Qt::AlignCenter);
            m_counts->setItem(split, c, item);
        }
    }
    m_export->setEnabled(stats.has_value());
    loadGallery();
}

void DatasetPage::loadGallery()
{
    const int request = ++m_galleryRequest;
    m_gallery->clear();
    if (!m_workflow->session().datasetStats)
        return;
    (void)QtConcurrent::run(readCrops, m_workflow->session().dir, m_split->currentData().toString(),
                            m_class->currentData().toInt(), 400)
        .then(this, [this, request](const QList<Crop> &crops) {
            if (request != m_galleryRequest)
                return; // the user chose another split meanwhile
            for (const Crop &c : crops) {
                auto *item = new QListWidgetItem(QIcon(QPixmap::fromImage(c.image)), QString());
                item->setToolTip(c.tip);
                m_gallery->addItem(item);
            }
        });
}

} // namespace edgetrain::ui
