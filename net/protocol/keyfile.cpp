#include "net/protocol/keyfile.h"

#include <QCryptographicHash>
#include <QFile>
#include <QRandomGenerator>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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

namespace {

/** Gives the open file mode 0600 (whatever the umask made of it), writes all of `text` and
 *  syncs it; false, with errno set, if any of it fails. */
bool writeSecret(int fd, const QByteArray &text)
{
    return ::fchmod(fd, 0600) == 0 &&
           ::write(fd, text.constData(), std::size_t(text.size())) == text.size() &&
           ::fsync(fd) == 0;
}

QString writeError(const QString &path, int errorNumber)
{
    return QStringLiteral("cannot write the key file '%1': %2")
        .arg(path, QString::fromLocal8Bit(std::strerror(errorNumber)));
}

} // namespace

bool writeNewKeyFile(const QString &path, QString *error, ExistingKey existing)
{
    QByteArray key(32, '\0');
    QRandomGenerator::system()->generate(key.begin(), key.end());
    const QByteArray text = key.toBase64() + '\n';
    const QByteArray target = QFile::encodeName(path);
    // Files are made with mode 0600 by open(2) and mkostemp(3), so the key is never readable by
    // others, not even for a moment.
    if (existing == ExistingKey::Refuse) {
        // O_EXCL: this call makes the file or fails, even if another program makes it meanwhile
        // (and a symbolic link there counts as a file).
        const int fd =
            ::open(target.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(0600));
        if (fd < 0) {
            *error = errno == EEXIST ? QStringLiteral("the key file '%1' exists already").arg(path)
                                     : writeError(path, errno);
            return false;
        }
        const bool written = writeSecret(fd, text);
        const int failure = errno;
        ::close(fd);
        if (!written) {
            ::unlink(target.constData());
            *error = writeError(path, failure);
        }
        return written;
    }
    // A new file next to the old one, renamed over it: the old key stays whole until the new one
    // is complete.
    QByteArray temp = target + ".new-XXXXXX";
    const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
    if (fd < 0) {
        *error = writeError(path, errno);
        return false;
    }
    bool written = writeSecret(fd, text);
    int failure = errno;
    // The new key keeps the old one's owner: a service reading it as its own user (edgetrain)
    // must still read it after root replaced it. (Not root: the owner is already ours.)
    struct stat old
    {};
    if (written && ::stat(target.constData(), &old) == 0 && ::geteuid() == 0 &&
        ::fchown(fd, old.st_uid, old.st_gid) != 0) {
        written = false;
        failure = errno;
    }
    ::close(fd);
    if (written && ::rename(temp.constData(), target.constData()) != 0) {
        written = false;
        failure = errno;
    }
    if (!written) {
        ::unlink(temp.constData());
        *error = writeError(path, failure);
    }
    return written;
}

QString keyFingerprint(const QByteArray &key)
{
    QCryptographicHash sha(QCryptographicHash::Sha256);
    sha.addData(QByteArrayLiteral("edgetrain cluster key fingerprint"));
    sha.addData(key);
    const QByteArray hex = sha.result().left(16).toHex();
    QString text;
    for (qsizetype i = 0; i < hex.size(); i += 4) {
        if (i > 0)
            text += QLatin1Char(':');
        text += QLatin1String(hex.mid(i, 4));
    }
    return text;
}

} // namespace edgetrain::net
