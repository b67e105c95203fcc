// tst_crashsave's child: reopens the session in DIR the way the app does, then takes the steps of
// CrashSaveScript after STEP one by one, each saved by the app's own save path, until it is
// killed. It says "ready STEP" once the session is open and "done N" after step N's save has
// returned, each line written straight to the pipe (no buffer the kill could lose).
//
//   crashsave-child DIR STEP

#include "crashsavescript.h"

#include <QCoreApplication>

#include <cstdio>
#include <unistd.h>

namespace {

void say(const QByteArray &line)
{
    const QByteArray text = line + '\n';
    qsizetype written = 0;
    while (written < text.size()) {
        const ssize_t n =
            ::write(STDOUT_FILENO, text.constData() + written, std::size_t(text.size() - written));
        if (n <= 0)
            return;
        written += n;
    }
}

int fail(const QString &what)
{
    std::fprintf(stderr, "crashsave-child: %s\n", qPrintable(what));
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    bool numeric = false;
    const int first = args.size() == 3 ? args[2].toInt(&numeric) : 0;
    if (!numeric || first < 0)
        return fail(QStringLiteral("usage: crashsave-child DIR STEP"));
    CrashSaveState state;
    QString error;
    if (!state.open(args[1], true, &error))
        return fail(QStringLiteral("cannot reopen the session: ") + error);
    say("ready " + QByteArray::number(first));
    for (int step = first + 1;; ++step) {
        const CrashSaveStep taken = CrashSaveScript::advance(state, step);
        if (!CrashSaveScript::save(state, taken.file, &error))
            return fail(QStringLiteral("step %1: %2").arg(step).arg(error));
        say("done " + QByteArray::number(step));
    }
}
