#pragma once

#include "app/session/workflow.h"

#include <QWidget>

#include <map>

class QGridLayout;
class QLabel;
class QPushButton;

namespace edgetrain::ui {

class DeviceTile;

/**
 * Step 8: the trained student sent to the paired devices, each running it on its own camera; a
 * grid of the devices' live views (DeviceTile), a device that refuses or drops out marked on its
 * tile, Stop for all of them. Without a deployment running it shows the session's last one. The
 * Deploy button is disabled, with the reason next to it, while the workflow's
 * deploymentBlocker() names one.
 */
class DeployPage : public QWidget
{
    Q_OBJECT

public:
    explicit DeployPage(app::Workflow *workflow, QWidget *parent = nullptr);

    QPushButton *deployButton() const { return m_deploy; }
    QPushButton *stopButton() const { return m_stop; }
    /** Why Deploy is disabled (empty while it is enabled). */
    QLabel *reasonLabel() const { return m_reason; }
    /** The line under the buttons: how many devices run, and their frames/s in all. */
    QLabel *summaryLabel() const { return m_summary; }
    /** The device's tile, or nullptr. */
    DeviceTile *tile(const QString &node) const;
    int tileCount() const { return int(m_tiles.size()); }

protected:
    /** The reason is checked again whenever the step is shown (a student may have been trained,
     *  or its file removed, meanwhile). */
    void showEvent(QShowEvent *event) override;

private:
    void startDeployment();
    void showRecord();
    void updateButtons();
    void updateSummary();
    DeviceTile *ensureTile(const QString &node);
    void clearTiles();

    app::Workflow *m_workflow;
    QPushButton *m_deploy, *m_stop;
    QLabel *m_reason, *m_summary;
    QGridLayout *m_grid;
    std::map<QString, DeviceTile *> m_tiles;
    std::map<QString, double> m_fps; // each running device's latest frames/s
};

} // namespace edgetrain::ui
