#include "exportcommand.h"

#include "clicontext.h"
#include "core/error.h"
#include "vision/export/studentexport.h"
#include "vision/studentteacher.h"

#include <filesystem>

namespace edgetrain::app {

int ExportCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("export"),
                   QStringLiteral("Write a session's trained full-frame student as ONNX (opset 13, "
                                  "for OpenCV's dnn, ONNX Runtime, ...) or safetensors, with the "
                                  "metadata that says how to feed and decode it."),
                   arguments);
    cli.addOption("session", "The session folder (its detector.safetensors).", "DIR");
    cli.addOption("format", "onnx or safetensors (default: the one --out's suffix names).",
                  "FORMAT");
    cli.addOption("out", "The file to write (replaced atomically if it exists).", "FILE");
    if (!cli.parse())
        return ExitSuccess;
    if (!cli.isSet("session") || cli.text("session").empty())
        throw UsageError("--session is required");
    if (!cli.isSet("out") || cli.text("out").empty())
        throw UsageError("--out is required");
    const std::string session = cli.text("session"), out = cli.text("out");
    vision::StudentExport::Format format;
    try {
        format = cli.isSet("format") ? vision::StudentExport::parseFormat(cli.text("format"))
                                     : vision::StudentExport::formatOf(out);
    } catch (const core::SpecError &e) {
        throw UsageError(std::string(e.what()) + " (--format onnx|safetensors)");
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(session, ec))
        throw UsageError("--session '" + session + "' is not a folder");
    if (!std::filesystem::exists(vision::StudentTeacher::weightsPath(session), ec))
        throw core::IoError("session '" + session +
                            "' has no trained student (no detector.safetensors): train one "
                            "first (edgetrain-cli viewpoint, or the window's Train step)");
    cli.message(vision::StudentExport::exportSession(session, format, out));
    if (cli.json()) {
        core::Json j;
        j.set("command", "export").set("session", session);
        j.set("format", format == vision::StudentExport::Format::Onnx ? "onnx" : "safetensors");
        j.set("out", out).set("bytes", std::int64_t(std::filesystem::file_size(out)));
        cli.printJson(j);
    }
    return ExitSuccess;
}

} // namespace edgetrain::app
