#pragma once

#include <QByteArray>
#include <QString>

namespace edgetrain::net {

/**
 * Reads the cluster key: the file's bytes without surrounding white space. Refuses (false, with a
 * message naming the file) a missing, unreadable or empty file, and one that every user of the
 * machine may read (the key is the cluster's only secret: chmod 600).
 */
bool readKeyFile(const QString &path, QByteArray *key, QString *error);

/** Writes a new random cluster key (32 bytes, base64) to `path`, readable by its owner only from
 *  the moment it exists. False with a message naming the file if it cannot. */
bool writeNewKeyFile(const QString &path, QString *error);

} // namespace edgetrain::net
