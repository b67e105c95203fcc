#pragma once

#include <stdexcept>
#include <string>

namespace edgetrain::core {

/**
 * Error policy: anything caused by input (files, specs, settings, shapes handed in from outside)
 * throws an Error, with a message that names what and where. Broken invariants inside the engine
 * are asserts, not exceptions. This is the root of every error the project throws, so a boundary
 * catches one type: core's kinds below, vision's (SourceError, TeacherError), net's
 * (CollectiveError: a collective broke; LinkError: the coordinator went away) and the CLI's
 * UsageError. Callers catch at their boundary and turn it into a signal, a dialog or a CLI
 * message with exit status 1 (2 for usage).
 */
class Error : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

/** A tensor shape does not fit what a layer, model or file expects. */
class ShapeError : public Error
{
public:
    using Error::Error;
};

/** A file or buffer is malformed: the message names the file and the byte offset or field. */
class FormatError : public Error
{
public:
    using Error::Error;
};

/** A file cannot be opened, read or written. */
class IoError : public Error
{
public:
    using Error::Error;
};

/** A ModelSpec, option or setting is invalid (unknown model, absurd batch size, ...). */
class SpecError : public Error
{
public:
    using Error::Error;
};

} // namespace edgetrain::core
