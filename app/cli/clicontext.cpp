#include "clicontext.h"

#include "core/conv2d.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/memoryplanner.h"
#include "core/parallel.h"
#include "core/zoo.h"

#include <QThread>

#include <csignal>
#include <cstdio>
#include <unistd.h>

namespace edgetrain::app {

namespace {
std::atomic<bool> g_stop{false};

extern "C" void onInterrupt(int)
{
    g_stop.store(true);
    std::signal(SIGINT, SIG_DFL); // a second Ctrl-C ends the process at once
}
} // namespace

CliContext::CliContext(QString command, QString description, QStringList arguments)
    : m_command(std::move(command)), m_arguments(std::move(arguments)),
      m_tty(::isatty(STDERR_FILENO) != 0)
{
    m_parser.setApplicationDescription(description);
    m_parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    m_parser.addOption(
        {{QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help.")});
    addOption(QStringLiteral("json"),
              QStringLiteral("Print one machine-readable JSON object as the last line of stdout."));
    addOption(
        QStringLiteral("threads"),
        QStringLiteral("Engine threads (default: all %1 cores).").arg(QThread::idealThreadCount()),
        QStringLiteral("T"), QString::number(QThread::idealThreadCount()));
    addOption(QStringLiteral("gemm"),
              QStringLiteral("GEMM backend: eigen or dnnl (default: %1).")
                  .arg(QString::fromLatin1(core::gemmBackendName(core::gemmBackend()).data())),
              QStringLiteral("BACKEND"));
    addOption(QStringLiteral("conv"),
              QStringLiteral("Convolution backend: im2col, dnnl or winograd (default: %1).")
                  .arg(QString::fromLatin1(core::convBackendName(core::convBackend()).data())),
              QStringLiteral("BACKEND"));
}

void CliContext::addOption(const QString &name, const QString &description,
                           const QString &valueName, const QString &defaultValue)
{
    QCommandLineOption option(name, description, valueName, defaultValue);
    m_parser.addOption(option);
}

void CliContext::addPositional(const QString &name, const QString &description)
{
    m_parser.addPositionalArgument(name, description);
    m_positional.append(name);
}

bool CliContext::parse()
{
    QStringList args = m_arguments;
    args.prepend(QStringLiteral("edgetrain-cli ") + m_command);
    if (!m_parser.parse(args))
        throw UsageError(m_parser.errorText().toStdString());
    if (m_parser.isSet(QStringLiteral("help"))) {
        std::string help = m_parser.helpText().toStdString();
        std::fputs(help.c_str(), stdout);
        return false;
    }
    const QStringList given = m_parser.positionalArguments();
    if (given.size() > m_positional.size())
        throw UsageError("unexpected argument '" + given.at(m_positional.size()).toStdString() +
                         "' (see edgetrain-cli " + m_command.toStdString() + " --help)");
    if (given.size() < m_positional.size())
        throw UsageError(m_positional.at(given.size()).toStdString() +
                         " is required (edgetrain-cli " + m_command.toStdString() + " " +
                         m_positional.join(QLatin1Char(' ')).toStdString() + ")");
    m_threads = int(integer(QStringLiteral("threads"), 1, 256));
    core::setDefaultThreadCount(m_threads); // and for any thread a command starts
    if (isSet(QStringLiteral("gemm"))) {
        try {
            core::setGemmBackend(core::parseGemmBackend(text(QStringLiteral("gemm"))));
        } catch (const std::exception &e) {
            throw UsageError(e.what());
        }
    }
    if (isSet(QStringLiteral("conv"))) {
        try {
            core::setConvBackend(core::parseConvBackend(text(QStringLiteral("conv"))));
        } catch (const std::exception &e) {
            throw UsageError(e.what());
        }
    }
    return true;
}

std::string CliContext::text(const QString &name) const
{
    return m_parser.value(name).toStdString();
}

std::int64_t CliContext::integer(const QString &name, std::int64_t lo, std::int64_t hi) const
{
    bool ok = false;
    const qlonglong v = m_parser.value(name).toLongLong(&ok);
    if (!ok || v < lo || v > hi)
        throw UsageError("--" + name.toStdString() + " must be an integer from " +
                         std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                         m_parser.value(name).toStdString() + "'");
    return v;
}

double CliContext::number(const QString &name, double lo, double hi) const
{
    bool ok = false;
    const double v = m_parser.value(name).toDouble(&ok);
    if (!ok || !(v >= lo && v <= hi))
        throw UsageError("--" + name.toStdString() + " must be a number from " +
                         std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                         m_parser.value(name).toStdString() + "'");
    return v;
}

std::int64_t CliContext::byteSize(const QString &name) const
{
    if (!isSet(name))
        return -1;
    try {
        return core::parseByteSize(text(name));
    } catch (const core::SpecError &e) {
        throw UsageError("--" + name.toStdString() + ": " + e.what());
    }
}

const std::atomic<bool> *CliContext::stopFlag()
{
    return &g_stop;
}

void CliContext::installStopHandler()
{
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
}

void CliContext::progress(const std::string &line) const
{
    if (m_tty)
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
    else
        std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
}

void CliContext::progressDone() const
{
    if (m_tty)
        std::fputs("\r\033[K", stderr);
}

void CliContext::message(const std::string &line) const
{
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
}

void CliContext::printJson(const core::Json &result) const
{
    std::fprintf(stdout, "%s\n", result.dump().c_str());
    std::fflush(stdout);
}

core::Json CliContext::memoryJson(const core::MemorySnapshot &snapshot)
{
    core::Json peaks;
    for (int i = 0; i < core::kMemoryCategoryCount; ++i)
        peaks.set(std::string(core::memoryCategoryName(core::MemoryCategory(i))),
                  snapshot.peak_bytes[std::size_t(i)]);
    return peaks;
}

core::ModelSpec CliContext::modelSpec() const
{
    core::ModelSpec spec = core::Zoo::resolve(text(QStringLiteral("model")));
    if (!isSet(QStringLiteral("input")))
        return spec;
    core::Shape input;
    try {
        input = core::parseSampleShape(text(QStringLiteral("input")));
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
    return spec.withInputShape(input);
}

std::string groupDigits(double value)
{
    const std::string digits = std::to_string(static_cast<long long>(value + 0.5));
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-')
            out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

} // namespace edgetrain::app

namespace edgetrain::app {
core::TensorDataset loadNamedDataset(const std::string &name, const std::string &directory,
                                     core::FashionMnist::Split split, std::int64_t limit)
{
    if (name != "fashion-mnist")
        throw UsageError("unknown dataset '" + name + "' (known: fashion-mnist)");
    return core::FashionMnist::load(
        directory.empty() ? core::FashionMnist::kDefaultDirectory : directory, split, limit);
}

/** "3s", "500ms", "2.5" (seconds) -> milliseconds; UsageError otherwise. */
std::chrono::milliseconds parseDuration(const std::string &text, const char *option)
{
    QString t = QString::fromStdString(text).trimmed();
    double scale = 1000.0;
    if (t.endsWith(QLatin1String("ms"))) {
        scale = 1.0;
        t.chop(2);
    } else if (t.endsWith(QLatin1Char('s'))) {
        t.chop(1);
    }
    bool ok = false;
    const double v = t.toDouble(&ok);
    if (!ok || !(v > 0) || v * scale > 86400e3)
        throw UsageError(std::string("--") + option +
                         " must be a duration like 3s or 500ms, got '" + text + "'");
    return std::chrono::milliseconds(qint64(v * scale));
}

std::string formatPercent(double fraction)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * fraction);
    return buf;
}

} // namespace edgetrain::app
