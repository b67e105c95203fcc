#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace edgetrain::core {

/**
 * Replaces `path` with `bytes` so that a reader, a crash or a power cut sees the old file or the
 * new one whole, never a mix. The bytes go to a temporary file of their own in the same folder
 * (`<name>.tmp.<pid>.<n>`: two saves of one path at once do not collide), are flushed to the
 * disk (fsync, as QSaveFile does on the Qt side), and the temporary file is renamed over `path`.
 * The folder must exist. Throws IoError "cannot write '<path>': <reason>" (or "cannot replace");
 * on failure the temporary file is gone and `path` is as it was.
 */
void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes);

/** The same for a file made of several pieces, written one after the other (a large file need
 *  not be copied into one string first). */
void writeFileAtomically(const std::filesystem::path &path,
                         std::span<const std::string_view> pieces);

/** The whole file as bytes. Throws IoError "cannot read '<path>': <reason>". */
std::string readFile(const std::filesystem::path &path);

/** The whole file, or "" with `error` set (for callers that phrase the failure themselves). */
std::string readFile(const std::filesystem::path &path, std::error_code &error);

} // namespace edgetrain::core
