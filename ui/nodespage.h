#pragma once

#include "app/session/workflow.h"

#include <QWidget>

class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace edgetrain::ui {

/** Step 1: the nodes discovery finds (or typed in by address), paired with the cluster key. */
class NodesPage : public QWidget
{
    Q_OBJECT

public:
    explicit NodesPage(app::Workflow *workflow, QWidget *parent = nullptr);
    QTableWidget *table() const { return m_table; }

    /** "New cluster key…": asks for a file (confirming before it replaces one), writes a new key
     *  there and makes it the session's key. */
    void newClusterKey();
    /** "Set up a device…": opens the setup dialog (not modal) for the session's key. */
    void showDeviceSetup();
    /** Starts a rehearsal lab with the devices and link in the page's fields, unless one is up
     *  or starting; a refusal is shown. */
    void startRehearsal();

private:
    // The page's parts, each made and connected once by the constructor.
    QFormLayout *keyForm();
    void addRehearsalRow(QFormLayout *form);
    void addNodeTable(QVBoxLayout *layout);
    void warn(const QString &text);
    void refresh();
    void showKey();
    QString selectedKey() const;

    app::Workflow *m_workflow;
    QLineEdit *m_keyFile, *m_probe, *m_address, *m_labDevices, *m_labLink;
    QPushButton *m_labButton;
    QLabel *m_labState, *m_fingerprint;
    QTableWidget *m_table;
};

} // namespace edgetrain::ui
