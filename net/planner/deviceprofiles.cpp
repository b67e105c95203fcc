#include "net/planner/deviceprofiles.h"

#include "core/error.h"

#include <QDir>
#include <QFile>
#include <QStandardPaths>

#include <algorithm>
#include <map>

namespace edgetrain::net {

namespace {

core::DeviceProfile parseFile(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw core::IoError("cannot read device profile '" + path.toStdString() + "'");
    const QByteArray text = f.readAll();
    // ":/devices/pi3b.json" is named as the file it was built from
    const std::string name = path.startsWith(QLatin1Char(':'))
                                 ? "resources" + path.mid(1).toStdString()
                                 : path.toStdString();
    return core::DeviceProfile::fromJson(
        core::Json::parse(std::string_view(text.constData(), std::size_t(text.size())), name),
        name);
}

std::vector<core::DeviceProfile> inFolder(const QString &folder)
{
    std::vector<core::DeviceProfile> out;
    const QDir dir(folder);
    for (const QString &file :
         dir.entryList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name))
        out.push_back(parseFile(dir.filePath(file)));
    return out;
}

} // namespace

QString DeviceProfiles::userDirectory()
{
    const QString overridden = qEnvironmentVariable("EDGETRAIN_DEVICE_DIR");
    if (!overridden.isEmpty())
        return overridden;
    return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
           QStringLiteral("/edgetrain/devices");
}

std::vector<core::DeviceProfile> DeviceProfiles::all()
{
    std::map<std::string, core::DeviceProfile> byId;
    for (core::DeviceProfile &p : inFolder(QStringLiteral(":/devices")))
        byId[p.id] = std::move(p);
    for (core::DeviceProfile &p : inFolder(userDirectory()))
        byId[p.id] = std::move(p);
    std::vector<core::DeviceProfile> out;
    for (auto &[id, p] : byId)
        out.push_back(std::move(p));
    return out;
}

core::DeviceProfile DeviceProfiles::find(const QString &name)
{
    if (name.contains(QLatin1Char('/')) || name.endsWith(QLatin1String(".json")))
        return parseFile(name);
    const std::vector<core::DeviceProfile> profiles = all();
    const std::string wanted = name.toStdString();
    for (const core::DeviceProfile &p : profiles)
        if (p.answersTo(wanted))
            return p;
    std::string known;
    for (const core::DeviceProfile &p : profiles) {
        known += known.empty() ? "" : ", ";
        known += p.id;
        for (const std::string &alias : p.aliases)
            known += " (" + alias + ")";
    }
    throw core::SpecError("unknown device profile '" + wanted + "' (known: " + known +
                          "; or a path to a profile file)");
}

} // namespace edgetrain::net
