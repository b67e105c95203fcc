#pragma once

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli key new FILE [--force]`: writes a new cluster key (net::writeNewKeyFile, mode
 * 0600), refusing an existing FILE without --force (usage error, status 2: the old key may be in
 * use), and prints its fingerprint. `edgetrain-cli key fingerprint FILE`: the fingerprint of a
 * key file (net::keyFingerprint), to compare two machines' keys without showing them.
 */
class KeyCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
