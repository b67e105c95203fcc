#pragma once

#include "net/agent/nodeserver.h"

#include <QString>
#include <QStringList>

namespace edgetrain::app {

/**
 * What edgetrain-node runs with, from its config file (`--config`, /etc/edgetrain/node.conf for
 * the packaged service) and its command line; the command line is applied last, so it wins.
 *
 * The file has one `field = value` a line; blank lines and lines starting with `#` are skipped.
 * The fields are the long options' names: name, port, threads, memory-limit, data-dir, key-file,
 * discovery-port, camera, camera-rate, and multicast (yes or no; the command line's
 * --no-multicast). Relative
 * paths are relative to the file's folder (camera's too, unless it is "camera:N"). A field may
 * appear once.
 */
struct NodeConfig
{
    static constexpr quint16 kDefaultPort = 47700;

    NodeConfig();

    net::NodeOptions options; // everything but the key itself (read from key_file)
    QString key_file;
    int threads; // the engine's threads for training and deployed models; default: every core
    /** What a deployed model may read (camera:N, a video file or an image folder); empty: the
     *  node has no camera and refuses deployments. Set on the node only, never by a
     *  coordinator. */
    QString camera;
    /** The pace of a camera that is a file or folder (frames/s): 0, its own frame rate;
     *  infinity ("max"), unpaced, every frame as fast as the model takes them. A camera:N
     *  device ignores it. Set on the node only, like camera. */
    double camera_rate_fps = 0.0;

    /** The fields that take a value, in the order --help lists their options. */
    static QStringList fields();

    /**
     * Sets `field` from its text. False, with what the field takes in core::FieldCheck's words
     * ("an integer from 0 to 65535") in `expected`, when the text is not such a value, or with
     * "a known field" when there is no such field. Empty paths and names are refused.
     */
    bool set(const QString &field, const QString &value, QString *expected);

    /**
     * Reads a config file, setting each line's field in turn. At the first bad line (no `=`, an
     * unknown or repeated field, a value the field does not take) returns false with
     * "FILE:LINE: " and what is wrong in `error`; fields set by earlier lines stay set. A file
     * that cannot be read is refused with its name and the reason.
     */
    bool readFile(const QString &path, QString *error);
};

} // namespace edgetrain::app
