#pragma once

#include "vision/framestudent.h"

#include <map>
#include <string>

namespace edgetrain::vision {

/**
 * A session's trained full-frame student as a file other tools run: ONNX (OnnxExport) or
 * safetensors (the engine's own weights). Both carry the same metadata, everything a runtime
 * needs to feed and decode the student as FrameStudent does (keys "edgetrain.*", listed by
 * metadata()): input size, layout, channel order and normalisation, the output's heads and
 * stride, the decoding (3x3 peaks, top_k, NMS, the mirror view) and the operating threshold.
 * `kFormatKey` = `kFormat` marks the file as this export. One function for the CLI and the
 * window (`edgetrain-cli export`, the Report step's "Export student...").
 */
class StudentExport
{
public:
    enum class Format { Onnx, Safetensors };
    static constexpr const char *kFormatKey = "edgetrain.format";
    static constexpr const char *kFormat = "centernet-student/1";

    /** "onnx" or "safetensors"; throws core::SpecError naming `text` otherwise. */
    static Format parseFormat(const std::string &text);
    /** The format a file's suffix names (.onnx, .safetensors); throws core::SpecError. */
    static Format formatOf(const std::string &path);

    /** The metadata of an export of `model` decoded as `decoding` at `threshold` (`calibrated`:
     *  the session chose it; otherwise the student's default). */
    static std::map<std::string, std::string> metadata(const core::Model &model,
                                                       const FrameStudent::Decoding &decoding,
                                                       float threshold, bool calibrated);
    /** Whether metadata marks an export of this kind (kFormatKey). */
    static bool isStudent(const std::map<std::string, std::string> &metadata);

    struct OperatingPoint
    {
        FrameStudent::Decoding decoding;
        float threshold = 0.3f;
    };
    /** The decoding and threshold metadata() wrote. Throws core::FormatError naming `source` and
     *  the key that is missing or malformed, or an unknown kFormat version. */
    static OperatingPoint operatingPoint(const std::map<std::string, std::string> &metadata,
                                         const std::string &source);

    /**
     * Writes the student of `sessionDir` (StudentTeacher::weightsPath, run as the session runs
     * it: its saved threshold and views) to `outPath` in `format`, atomically. Returns a line
     * saying what was written. Throws core::IoError / core::FormatError naming the file,
     * core::SpecError if the model has no export form.
     */
    static std::string exportSession(const std::string &sessionDir, Format format,
                                     const std::string &outPath);
};

} // namespace edgetrain::vision
