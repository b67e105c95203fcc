#include "nodeconfig.h"

#include "core/error.h"
#include "core/fieldcheck.h"
#include "core/memoryplanner.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QThread>

#include <limits>
#include <optional>

namespace edgetrain::app {

namespace {

/** The integer `text` holds if it is one from lo to hi; otherwise what the field takes. */
std::optional<int> integerIn(const QString &text, int lo, int hi, QString *expected)
{
    bool ok = false;
    const int v = text.toInt(&ok);
    if (ok && v >= lo && v <= hi)
        return v;
    *expected = QString::fromStdString(core::FieldCheck::integerFrom(lo, hi));
    return std::nullopt;
}

bool isPathField(const QString &field)
{
    return field == QLatin1String("key-file") || field == QLatin1String("data-dir") ||
           field == QLatin1String("camera");
}

/** A camera given by its device number rather than a path. */
bool isCameraDevice(const QString &value)
{
    return value.startsWith(QLatin1String("camera:"));
}

} // namespace

NodeConfig::NodeConfig() : threads(QThread::idealThreadCount())
{
    options.port = kDefaultPort;
}

QStringList NodeConfig::fields()
{
    return {QStringLiteral("name"),           QStringLiteral("port"),
            QStringLiteral("key-file"),       QStringLiteral("threads"),
            QStringLiteral("memory-limit"),   QStringLiteral("data-dir"),
            QStringLiteral("discovery-port"), QStringLiteral("camera"),
            QStringLiteral("camera-rate")};
}

bool NodeConfig::set(const QString &field, const QString &value, QString *expected)
{
    if (field == QLatin1String("name") || isPathField(field)) {
        if (value.isEmpty()) {
            *expected = field == QLatin1String("name") ? QStringLiteral("a name")
                                                       : QStringLiteral("a path");
            return false;
        }
        QString &target = field == QLatin1String("name")       ? options.name
                          : field == QLatin1String("key-file") ? key_file
                          : field == QLatin1String("camera")   ? camera
                                                               : options.data_dir;
        target = value;
        return true;
    }
    if (field == QLatin1String("port")) {
        const auto port = integerIn(value, 0, 65535, expected);
        if (port)
            options.port = quint16(*port);
        return port.has_value();
    }
    if (field == QLatin1String("discovery-port")) {
        const auto port = integerIn(value, 1, 65535, expected);
        if (port)
            options.discovery_port = quint16(*port);
        return port.has_value();
    }
    if (field == QLatin1String("threads")) {
        const auto n = integerIn(value, 1, 256, expected);
        if (n)
            threads = *n;
        return n.has_value();
    }
    if (field == QLatin1String("camera-rate")) {
        if (value == QLatin1String("max")) {
            camera_rate_fps = std::numeric_limits<double>::infinity();
            return true;
        }
        bool ok = false;
        const double fps = value.toDouble(&ok);
        if (!ok || !(fps >= 0.1 && fps <= 1000)) {
            *expected = QStringLiteral("max or ") +
                        QString::fromStdString(core::FieldCheck::numberFrom(0.1, 1000));
            return false;
        }
        camera_rate_fps = fps;
        return true;
    }
    if (field == QLatin1String("memory-limit")) {
        try {
            options.memory_limit = core::parseByteSize(value.toStdString());
            return true;
        } catch (const core::SpecError &) {
            *expected = QStringLiteral("a size such as 900MiB, 1.5GiB or 800MB");
            return false;
        }
    }
    if (field == QLatin1String("multicast")) {
        if (value != QLatin1String("yes") && value != QLatin1String("no")) {
            *expected = QStringLiteral("yes or no");
            return false;
        }
        options.multicast = value == QLatin1String("yes");
        return true;
    }
    *expected = QStringLiteral("a known field");
    return false;
}

bool NodeConfig::readFile(const QString &path, QString *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        *error =
            QStringLiteral("cannot read the config file '%1': %2").arg(path, file.errorString());
        return false;
    }
    const QDir folder = QFileInfo(path).absoluteDir();
    QHash<QString, int> seen; // field -> the line that set it
    for (int line = 1; !file.atEnd(); ++line) {
        const QString text = QString::fromUtf8(file.readLine()).trimmed();
        if (text.isEmpty() || text.startsWith(QLatin1Char('#')))
            continue;
        const QString where = QStringLiteral("%1:%2: ").arg(path).arg(line);
        const qsizetype eq = text.indexOf(QLatin1Char('='));
        if (eq < 0) {
            *error = where + QStringLiteral("expected 'field = value', got '%1'").arg(text);
            return false;
        }
        const QString field = text.left(eq).trimmed();
        const QString given = text.mid(eq + 1).trimmed();
        if (field != QLatin1String("multicast") && !fields().contains(field)) {
            *error = where + QStringLiteral("unknown field \"%1\" (known: %2, multicast)")
                                 .arg(field, fields().join(QStringLiteral(", ")));
            return false;
        }
        if (seen.contains(field)) {
            *error = where + QStringLiteral("field \"%1\" was already given on line %2")
                                 .arg(field)
                                 .arg(seen.value(field));
            return false;
        }
        seen.insert(field, line);
        const QString value = isPathField(field) && !given.isEmpty() && !isCameraDevice(given)
                                  ? QDir::cleanPath(folder.absoluteFilePath(given))
                                  : given;
        QString expected;
        if (!set(field, value, &expected)) {
            const QString got = QStringLiteral("'%1'").arg(given);
            *error = where + QString::fromStdString(core::FieldCheck::mustBe(
                                 field.toStdString(), expected.toStdString(), got.toStdString()));
            return false;
        }
    }
    return true;
}

} // namespace edgetrain::app
