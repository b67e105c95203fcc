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

/** What writeNewKeyFile does when `path` exists already. */
enum class ExistingKey {
    Replace, // the new key takes its place in one step (a new file renamed over it)
    Refuse,  // false and "exists": a key in use is never lost by accident
};

/**
 * Writes a new random cluster key (32 bytes, base64, a newline) to `path`, readable by its owner
 * only from the moment it exists. False with a message naming the file if it cannot (or if it
 * exists and `existing` is Refuse); `path` is then as it was.
 */
bool writeNewKeyFile(const QString &path, QString *error,
                     ExistingKey existing = ExistingKey::Replace);

/**
 * The key's fingerprint, to check that two machines hold the same cluster key without showing
 * it: SHA-256 over the ASCII label "edgetrain cluster key fingerprint" followed by the key as
 * readKeyFile returns it (the file's bytes without surrounding white space), its first 16 bytes
 * as eight groups of four lower-case hex digits joined by ':' ("3f0a:91c2:…", 39 characters).
 * The same key always gives the same fingerprint, whatever line ending its file has.
 *
 * It shows nothing of the key: the label keeps it apart from every other hash of the key (HMAC
 * hashes a key longer than 64 bytes with plain SHA-256 before using it). Someone who has it can
 * only test guesses, as anyone who talks to a node's handshake can: a key made by
 * writeNewKeyFile (256 random bits) is out of reach, a short pass phrase is not.
 */
QString keyFingerprint(const QByteArray &key);

} // namespace edgetrain::net
