// The cluster key file: made readable by its owner only, never overwritten by accident, and its
// fingerprint (the same for the same key, another for another key, nothing of the key in it).

#include "../support/files.h"
#include "net/protocol/keyfile.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h> // umask, stat
#include <unistd.h>   // geteuid, chown

using namespace edgetrain::net;
using edgetrain::tests::contents;
using edgetrain::tests::modeOf;

class TestKeyFile : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void newKeyIsOwnersOnly_data();
    void newKeyIsOwnersOnly();
    void refuseLeavesTheOldKey();
    void replaceTakesTheOldKeysPlace();
    void replaceKeepsTheOwner();
    void fingerprintIsStableAndShort();
    void fingerprintTellsKeysApart();

private:
    QTemporaryDir m_dir;
};

void TestKeyFile::newKeyIsOwnersOnly_data()
{
    QTest::addColumn<ExistingKey>("existing");
    QTest::addColumn<int>("umask");
    QTest::newRow("refuse, umask 022") << ExistingKey::Refuse << 022;
    QTest::newRow("replace, umask 022") << ExistingKey::Replace << 022;
    // A umask that would give everyone everything still gives the key to its owner only.
    QTest::newRow("refuse, umask 000") << ExistingKey::Refuse << 0;
    QTest::newRow("replace, umask 000") << ExistingKey::Replace << 0;
}

void TestKeyFile::newKeyIsOwnersOnly()
{
    QFETCH(ExistingKey, existing);
    QFETCH(int, umask);
    const QString path = m_dir.filePath(QStringLiteral("%1.key").arg(QTest::currentDataTag()));
    const mode_t before = ::umask(mode_t(umask));
    QString error;
    const bool written = writeNewKeyFile(path, &error, existing);
    ::umask(before);
    QVERIFY2(written, qPrintable(error));
    QCOMPARE(modeOf(path), 0600);
    const QByteArray text = contents(path);
    QVERIFY(text.endsWith('\n'));
    QCOMPARE(QByteArray::fromBase64(text.trimmed()).size(), 32);
    QByteArray key;
    QVERIFY2(readKeyFile(path, &key, &error), qPrintable(error));
    QCOMPARE(key, text.trimmed());
    // Nothing is left beside it (the replacement's temporary file is renamed, not copied).
    QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.new-*")}, QDir::Files).size(), 0);
}

void TestKeyFile::refuseLeavesTheOldKey()
{
    const QString path = m_dir.filePath(QStringLiteral("in-use.key"));
    QString error;
    QVERIFY2(writeNewKeyFile(path, &error), qPrintable(error));
    const QByteArray old = contents(path);
    QVERIFY(!writeNewKeyFile(path, &error, ExistingKey::Refuse));
    QVERIFY2(error.contains(QLatin1String("exists")) && error.contains(path), qPrintable(error));
    QCOMPARE(contents(path), old);
    // A symbolic link there is a file too: nothing is written where it points.
    const QString link = m_dir.filePath(QStringLiteral("link.key"));
    const QString target = m_dir.filePath(QStringLiteral("elsewhere"));
    QVERIFY(QFile::link(target, link));
    QVERIFY(!writeNewKeyFile(link, &error, ExistingKey::Refuse));
    QVERIFY(!QFileInfo::exists(target));
    // A folder that does not exist: said, with the file's name.
    QVERIFY(!writeNewKeyFile(m_dir.filePath(QStringLiteral("no/such.key")), &error,
                             ExistingKey::Refuse));
    QVERIFY2(error.contains(QLatin1String("no/such.key")), qPrintable(error));
}

void TestKeyFile::replaceTakesTheOldKeysPlace()
{
    // An old key anyone could read: the new one is its owner's only, and another key.
    const QString path = m_dir.filePath(QStringLiteral("old.key"));
    QFile old(path);
    QVERIFY(old.open(QIODevice::WriteOnly));
    old.write("old key\n");
    old.close();
    QVERIFY(old.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ReadOther));
    QString error;
    QVERIFY2(writeNewKeyFile(path, &error, ExistingKey::Replace), qPrintable(error));
    QCOMPARE(modeOf(path), 0600);
    QVERIFY(contents(path) != "old key\n");
    QVERIFY(!writeNewKeyFile(m_dir.filePath(QStringLiteral("no/such.key")), &error));
    QVERIFY2(error.contains(QLatin1String("no/such.key")), qPrintable(error));
}

void TestKeyFile::replaceKeepsTheOwner()
{
    // A service's key (owned by its user) replaced by root stays the service's.
    if (::geteuid() != 0)
        QSKIP("only root can give a file to another user");
    const QString path = m_dir.filePath(QStringLiteral("service.key"));
    QString error;
    QVERIFY2(writeNewKeyFile(path, &error), qPrintable(error));
    const uid_t nobody = 65534;
    QCOMPARE(::chown(QFile::encodeName(path).constData(), nobody, nobody), 0);
    const QByteArray old = contents(path);
    QVERIFY2(writeNewKeyFile(path, &error, ExistingKey::Replace), qPrintable(error));
    struct stat st
    {};
    QCOMPARE(::stat(QFile::encodeName(path).constData(), &st), 0);
    QCOMPARE(st.st_uid, nobody);
    QCOMPARE(st.st_gid, gid_t(nobody));
    QCOMPARE(modeOf(path), 0600);
    QVERIFY(contents(path) != old);
}

void TestKeyFile::fingerprintIsStableAndShort()
{
    // Computed by hand: printf 'edgetrain cluster key fingerprintabc' | sha256sum, first 32 digits.
    QCOMPARE(keyFingerprint("abc"), QStringLiteral("8f42:edc2:5667:c2c1:3286:f0d0:4e37:b8cb"));
    const QString path = m_dir.filePath(QStringLiteral("stable.key"));
    QString error;
    QVERIFY2(writeNewKeyFile(path, &error), qPrintable(error));
    QByteArray key;
    QVERIFY2(readKeyFile(path, &key, &error), qPrintable(error));
    const QString fingerprint = keyFingerprint(key);
    QVERIFY2(QRegularExpression(QStringLiteral("^[0-9a-f]{4}(:[0-9a-f]{4}){7}$"))
                 .match(fingerprint)
                 .hasMatch(),
             qPrintable(fingerprint));
    QCOMPARE(keyFingerprint(key), fingerprint);
    // The same key in another file, with a Windows line ending: the same fingerprint.
    const QString copy = m_dir.filePath(QStringLiteral("copy.key"));
    QFile f(copy);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(key + "\r\n");
    f.close();
    QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    QByteArray again;
    QVERIFY2(readKeyFile(copy, &again, &error), qPrintable(error));
    QCOMPARE(keyFingerprint(again), fingerprint);
    // Nothing of the key shows: neither its text nor its bytes in hex.
    const QString bare = QString(fingerprint).remove(QLatin1Char(':'));
    QVERIFY(!bare.contains(QString::fromLatin1(key.left(4).toHex())));
    QVERIFY(!fingerprint.contains(QString::fromLatin1(key.left(4))));
}

void TestKeyFile::fingerprintTellsKeysApart()
{
    QString error;
    QStringList seen;
    for (int i = 0; i < 20; ++i) {
        const QString path = m_dir.filePath(QStringLiteral("apart-%1.key").arg(i));
        QVERIFY2(writeNewKeyFile(path, &error), qPrintable(error));
        QByteArray key;
        QVERIFY2(readKeyFile(path, &key, &error), qPrintable(error));
        const QString fingerprint = keyFingerprint(key);
        QVERIFY2(!seen.contains(fingerprint), qPrintable(fingerprint));
        seen << fingerprint;
    }
    // Keys one character apart.
    QVERIFY(keyFingerprint("cluster key 1") != keyFingerprint("cluster key 2"));
}

QTEST_GUILESS_MAIN(TestKeyFile)
#include "tst_keyfile.moc"
