#include "keyfile.h"

#include <QFile>

#include <sys/stat.h>

namespace edgetrain::net {

bool readKeyFile(const QString &path, QByteArray *key, QString *error)
{
    if (path.isEmpty()) {
        *error = QStringLiteral("no key file given (--key-file F)");
        return false;
    }
    struct stat st
    {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0) {
        *error = QStringLiteral("key file '%1' does not exist").arg(path);
        return false;
    }
    if (st.st_mode & S_IROTH) {
        *error = QStringLiteral("key file '%1' is readable by every user of this machine; "
                                "run: chmod 600 '%1'")
                     .arg(path);
        return false;
    }
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot read key file '%1': %2").arg(path, f.errorString());
        return false;
    }
    *key = f.read(64 * 1024).trimmed();
    if (key->isEmpty()) {
        *error = QStringLiteral("key file '%1' is empty").arg(path);
        return false;
    }
    return true;
}

} // namespace edgetrain::net
