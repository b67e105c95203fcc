#pragma once

#include "net/lab/clusterstudy.h"
#include "net/lab/edgelab.h"

#include <QString>
#include <QStringList>

#include <map>
#include <vector>

namespace edgetrain::app {

/** What a study's report is made from: the preset, the lab it ran on, its finished runs. */
struct StudyReportContent
{
    net::ClusterStudy::Preset preset = net::ClusterStudy::Preset::PiCluster;
    net::LabState lab;
    std::map<QString, QString> configurations; // cluster-choice: ClusterStudy::choice's
    std::vector<net::StudyRecord> records;
    int runs_planned = 0;
};

/**
 * A study's charts (DIR/charts/NAME.png and .svg) and DIR/study.pdf, in the session report's
 * style, its tables laid out like the papers': pi-cluster — per model, time per epoch and test
 * accuracy by number of devices, sync against async (the paper's Tables 1-2, Figure 3), and each
 * configuration's CPU, memory and network (Table 3, Figures 4-7); cluster-choice — the planner's
 * pick per job and objective against the measured best, its hit rate (Figure 5), predicted
 * against measured training time. The charts are drawn with QPainter (chart.h): needs a
 * QGuiApplication (fonts), no widgets.
 */
class StudyReport
{
public:
    /** Appends the files written to `written`; false with `error` naming the file otherwise. */
    static bool write(const QString &dir, const StudyReportContent &content, QStringList *written,
                      QString *error);
};

} // namespace edgetrain::app
