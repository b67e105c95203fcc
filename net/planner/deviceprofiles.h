#pragma once

#include "core/deviceprofile.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace edgetrain::net {

/**
 * The device profiles EdgeTrain knows: the built-in ones (the JSON files in resources/devices,
 * compiled in) and the user's own (JSON files in ~/.config/edgetrain/devices, or the folder in
 * EDGETRAIN_DEVICE_DIR), which replace a built-in profile of the same id.
 */
class DeviceProfiles
{
public:
    /** Every profile, built-in first, sorted by id. Throws core::SpecError naming a bad file. */
    static std::vector<core::DeviceProfile> all();
    /** A profile by id or alias ("pi3", "pi4b-4gb"), or a path to a profile file (it contains a
     *  '/' or ends in .json). Throws core::SpecError for an unknown name (listing the known ids)
     *  and for a bad file (naming it and the field). */
    static core::DeviceProfile find(const QString &name);
    /** The folder of the user's own profiles. */
    static QString userDirectory();
};

} // namespace edgetrain::net
