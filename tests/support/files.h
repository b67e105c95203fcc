#pragma once
// Small file checks the suites share: a file's permission bits and its bytes.

#include <QByteArray>
#include <QFile>
#include <QString>

#include <sys/stat.h>

namespace edgetrain::tests {

/** The file's permission bits as stat(2) gives them (-1 if it cannot). */
inline int modeOf(const QString &path)
{
    struct stat st
    {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return -1;
    return int(st.st_mode & 07777);
}

/** The file's bytes (empty if it cannot be read). */
inline QByteArray contents(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace edgetrain::tests
