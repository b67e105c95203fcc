#include "keyfile.h"

#include <QFile>
#include <QRandomGenerator>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool writeNewKeyFile(const QString &path, QString *error)
{
    QByteArray key(32, '\0');
    QRandomGenerator::system()->generate(key.begin(), key.end());
    const QByteArray text = key.toBase64() + '\n';
    // open(2) with mode 0600, so the key is never readable by others, not even for a moment
    const int fd =
        ::open(QFile::encodeName(path).constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        *error = QStringLiteral("cannot write the key file '%1'").arg(path);
        return false;
    }
    const bool written = ::fchmod(fd, 0600) == 0 &&
                         ::write(fd, text.constData(), std::size_t(text.size())) == text.size();
    ::close(fd);
    if (!written)
        *error = QStringLiteral("cannot write the key file '%1'").arg(path);
    return written;
}

} // namespace edgetrain::net
