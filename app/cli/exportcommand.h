#pragma once

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli export --session DIR --format onnx|safetensors --out FILE`: the session's trained
 * full-frame student as a file other tools run (vision::StudentExport: ONNX or safetensors, with
 * the metadata a runtime needs to decode it as EdgeTrain does). --format defaults to the one the
 * --out suffix names. --json: {"command": "export", "session", "format", "out", "bytes"}.
 */
class ExportCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app
