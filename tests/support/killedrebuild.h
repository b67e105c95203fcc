#pragma once
// The states a dataset rebuild (vision::DatasetFolder) leaves when killed at each step, as QTest
// rows: the frame and the crop datasets' suites check their readers against the same table.

#include <QString>
#include <QTest>

namespace edgetrain::tests {

/**
 * Columns "folder", "old" and "staging" (the dataset folder, its .old and its staging folder,
 * each "A", "B", "A part", "B part" or "" for none; part: written part way, or deleted part way)
 * and "read" (the dataset that must be read), one row per step at which a rebuild of A into B
 * can be killed.
 */
inline void addKilledRebuildRows()
{
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QString>("old");
    QTest::addColumn<QString>("staging");
    QTest::addColumn<QString>("read");
    auto row = [](const char *name, const char *folder, const char *old, const char *staging,
                  const char *read) {
        QTest::newRow(name) << QString(folder) << QString(old) << QString(staging) << QString(read);
    };
    row("writing B", "A", "", "B part", "A");
    row("B written", "A", "", "B", "A");
    row("A moved aside", "", "A", "B", "A");
    row("A aside, the next build begun", "", "A", "", "A");
    row("B moved in", "B", "A", "", "B");
    row("deleting A", "B", "A part", "", "B");
    row("done", "B", "", "", "B");
}

} // namespace edgetrain::tests
