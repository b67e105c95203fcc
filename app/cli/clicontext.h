#pragma once

#include "core/error.h"
#include "core/json.h"
#include "core/memoryaccountant.h"
#include "core/modelspec.h"

#include <QCommandLineParser>
#include <QString>
#include <QStringList>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

namespace edgetrain::app {

/** edgetrain-cli exit statuses (DESIGN.md): 0 success, 1 runtime failure, 2 usage error. */
enum ExitCode : int { ExitSuccess = 0, ExitFailure = 1, ExitUsage = 2 };

/** A usage error (bad flag, bad value): reported with exit status 2. */
class UsageError : public core::Error
{
public:
    using core::Error::Error;
};

/**
 * What every subcommand shares: its parser with --help, --json and --threads, typed option
 * readers that throw UsageError with the option's name, the Ctrl-C stop flag, and output
 * (progress and messages on stderr; with --json, one JSON object as the last line of stdout).
 */
class CliContext
{
public:
    CliContext(QString command, QString description, QStringList arguments);

    QCommandLineParser &parser() { return m_parser; }
    void addOption(const QString &name, const QString &description, const QString &valueName = {},
                   const QString &defaultValue = {});
    /** Declares the command's next positional argument (e.g. "FILE"): parse() then wants exactly
     *  the declared ones, and says which is missing or surplus (UsageError) otherwise. */
    void addPositional(const QString &name, const QString &description);
    /** Parses; returns false if --help was printed. Throws UsageError on bad flags. */
    bool parse();
    /** The `index`-th positional argument, as given (after parse()). */
    QString positional(int index) const { return m_parser.positionalArguments().at(index); }

    bool isSet(const QString &name) const { return m_parser.isSet(name); }
    std::string text(const QString &name) const;
    std::int64_t integer(const QString &name, std::int64_t lo, std::int64_t hi) const;
    double number(const QString &name, double lo, double hi) const;
    /** A size like 300MiB or 1.5GiB in bytes, or -1 if the option is not set. */
    std::int64_t byteSize(const QString &name) const;
    bool json() const { return m_parser.isSet(QStringLiteral("json")); }
    int threads() const { return m_threads; }

    /** Set by SIGINT (first Ctrl-C: finish the current step and stop; the second one kills). */
    static const std::atomic<bool> *stopFlag();
    static void installStopHandler();

    void progress(const std::string &line) const;   // stderr, overwriting on a terminal
    void progressDone() const;                      // ends an overwritten line
    void message(const std::string &line) const;    // stderr
    void printJson(const core::Json &result) const; // stdout, one line

    static core::Json memoryJson(const core::MemorySnapshot &snapshot);

    /** --model (zoo name or ModelSpec file), at the --input sample shape if set (for commands
     *  that define both options). A malformed --input is a UsageError; a model that does not work
     * at that size a SpecError. */
    core::ModelSpec modelSpec() const;

private:
    QString m_command;
    QStringList m_arguments;
    QStringList m_positional; // the declared names, in order
    QCommandLineParser m_parser;
    int m_threads = 1;
    bool m_tty = false;
};

/** Formats 12345.6 as "12,346". */
std::string groupDigits(double value);

} // namespace edgetrain::app

#include "core/fashionmnist.h"

namespace edgetrain::app {
/**
 * The datasets the CLI knows by name: "fashion-mnist" (IDX .gz files in `directory`, default
 * the Debian package's folder). Throws UsageError for an unknown name, core errors for bad files.
 */
core::TensorDataset loadNamedDataset(const std::string &name, const std::string &directory,
                                     core::FashionMnist::Split split, std::int64_t limit);
/** "3s", "500ms", "2.5" (seconds) -> milliseconds; UsageError naming --option otherwise. */
std::chrono::milliseconds parseDuration(const std::string &text, const char *option);

/** 0.8574 -> "85.74%". */
std::string formatPercent(double fraction);

} // namespace edgetrain::app
