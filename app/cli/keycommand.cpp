#include "keycommand.h"

#include "clicontext.h"
#include "net/protocol/keyfile.h"

#include <QFileInfo>

#include <cstdio>

namespace edgetrain::app {

namespace {

/** The key file's fingerprint as the nodes will see it: through readKeyFile. */
QString fingerprintOf(const QString &file)
{
    QByteArray key;
    QString error;
    if (!net::readKeyFile(file, &key, &error))
        throw core::IoError(error.toStdString());
    return net::keyFingerprint(key);
}

/** "3f0a:…  cluster.key" on stdout, as sha256sum prints its sums; the JSON object for --json. */
core::Json report(const char *action, const QString &file, const QString &fingerprint)
{
    std::printf("%s  %s\n", qPrintable(fingerprint), qPrintable(file));
    std::fflush(stdout);
    core::Json j;
    j.set("command", "key").set("action", action);
    j.set("file", QFileInfo(file).absoluteFilePath().toStdString());
    j.set("fingerprint", fingerprint.toStdString());
    return j;
}

int runNew(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("key new"),
                   QStringLiteral("Write a new cluster key to FILE (32 random bytes, base64) "
                                  "readable by its owner only (mode 0600), and print its "
                                  "fingerprint. Every node and the app use a copy of this file."),
                   arguments);
    cli.addPositional(QStringLiteral("FILE"), QStringLiteral("The key file to write."));
    cli.addOption(QStringLiteral("force"),
                  QStringLiteral("Replace FILE if it exists (the devices that have the old key "
                                 "refuse the app until they get the new one)."));
    if (!cli.parse())
        return ExitSuccess;
    const QString file = cli.positional(0);
    const QFileInfo info(file);
    const bool exists = info.exists() || info.isSymLink();
    const bool force = cli.isSet(QStringLiteral("force"));
    if (exists && !force)
        throw UsageError("'" + file.toStdString() +
                         "' exists: it may be the key your devices use, and a new key there "
                         "would lock them out; add --force to replace it");
    QString error;
    if (!net::writeNewKeyFile(file, &error,
                              force ? net::ExistingKey::Replace : net::ExistingKey::Refuse))
        throw core::IoError(error.toStdString());
    cli.message("wrote a new cluster key to '" + file.toStdString() +
                "' (mode 0600: readable by its owner only)" +
                (exists ? "; it replaced the old key" : ""));
    core::Json j = report("new", file, fingerprintOf(file));
    j.set("mode", "0600").set("replaced", exists);
    if (cli.json())
        cli.printJson(j);
    return ExitSuccess;
}

int runFingerprint(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("key fingerprint"),
                   QStringLiteral("Print the fingerprint of the cluster key in FILE: the first 16 "
                                  "bytes of SHA-256 over \"edgetrain cluster key fingerprint\" and "
                                  "the key, in hex. Two machines hold the same key when their "
                                  "fingerprints are equal; the fingerprint shows nothing of the "
                                  "key. The key file must not be readable by other users."),
                   arguments);
    cli.addPositional(QStringLiteral("FILE"), QStringLiteral("The key file."));
    if (!cli.parse())
        return ExitSuccess;
    const QString file = cli.positional(0);
    const core::Json j = report("fingerprint", file, fingerprintOf(file));
    if (cli.json())
        cli.printJson(j);
    return ExitSuccess;
}

} // namespace

int KeyCommand::run(const QStringList &arguments)
{
    const QString action = arguments.isEmpty() ? QString() : arguments.first();
    const QStringList rest = arguments.mid(1);
    if (action == QLatin1String("new"))
        return runNew(rest);
    if (action == QLatin1String("fingerprint"))
        return runFingerprint(rest);
    if (action == QLatin1String("--help") || action == QLatin1String("-h")) {
        std::fputs("Usage: edgetrain-cli key new FILE [--force] | key fingerprint FILE   "
                   "(edgetrain-cli key new --help)\n",
                   stdout);
        return ExitSuccess;
    }
    throw UsageError(action.isEmpty() ? std::string("expected new or fingerprint")
                                      : "unknown action '" + action.toStdString() +
                                            "' (expected new or fingerprint)");
}

} // namespace edgetrain::app
