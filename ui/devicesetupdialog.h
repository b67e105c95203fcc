#pragma once

#include <QDialog>

class QPlainTextEdit;
class QPushButton;

namespace edgetrain::ui {

/**
 * "Set up a device…": the exact commands that make an edge device a node of this cluster (install
 * the edgetrain-node package, give it the cluster key, enable its service) and how to check on the
 * device that it holds the same key (its fingerprint), in a read-only text box with a Copy button.
 * It shows the key's fingerprint, never the key.
 */
class DeviceSetupDialog : public QDialog
{
    Q_OBJECT

public:
    /** `keyFile` and `fingerprint` are the app's (both empty: no key loaded yet). */
    DeviceSetupDialog(const QString &keyFile, const QString &fingerprint,
                      QWidget *parent = nullptr);

    /** The instructions for this key file and fingerprint, for EdgeTrain's own version. */
    static QString instructions(const QString &keyFile, const QString &fingerprint);
    /** What the box shows and Copy copies. */
    QString text() const;

private:
    QPlainTextEdit *m_text;
    QPushButton *m_copy;
};

} // namespace edgetrain::ui
