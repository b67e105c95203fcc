#pragma once

#include "app/session/workflow.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace edgetrain::ui {

/** Step 1: the nodes discovery finds (or typed in by address), paired with the cluster key. */
class NodesPage : public QWidget
{
    Q_OBJECT

public:
    explicit NodesPage(app::Workflow *workflow, QWidget *parent = nullptr);
    QTableWidget *table() const { return m_table; }

private:
    void refresh();
    QString selectedKey() const;

    app::Workflow *m_workflow;
    QLineEdit *m_keyFile, *m_probe, *m_address, *m_labDevices, *m_labLink;
    QPushButton *m_labButton;
    QLabel *m_labState;
    QTableWidget *m_table;
};

} // namespace edgetrain::ui
