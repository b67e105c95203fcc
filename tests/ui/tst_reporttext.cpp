// ReportText's words: the headline, plurals and ordinals, the training run in a sentence, the
// glossary.
#include "reportsupport.h"
#include "ui/reporttext.h"

#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QTest>

#include <algorithm>
#include <tuple>

using namespace edgetrain;

class TestReportText : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void headline_data();
    void headline();
    void words_data();
    void words();
    void trainingFacts();
    void glossary();
    void operatingPointNamesItsMeasure();
};

void TestReportText::operatingPointNamesItsMeasure()
{
    // The labels' choice is their best F0.5 now; a session saved before it took the best F1,
    // and the report names the measure each point was chosen by, read back from the file.
    app::Session s;
    vision::OperatingPoint p;
    p.threshold = 0.41f;
    p.f1 = 0.88;
    p.beta = 0.5;
    p.f_beta = 0.91;
    p.frames = 60;
    s.evaluation.operatingPoint = p;
    s.evaluation.operatingPointAgainst = QStringLiteral("labels");
    const QString now = ui::ReportText::operatingPoint(s);
    QVERIFY2(now.contains(QLatin1String("the best F0.5 (0.91), precision weighing more,")),
             qPrintable(now));
    QVERIFY(!now.contains(QLatin1String("F1")));
    QJsonObject json = s.toJson();
    app::Session back;
    QString error;
    QVERIFY2(back.fromJson(json, &error), qPrintable(error));
    QCOMPARE(ui::ReportText::operatingPoint(back), now);
    p.beta = 1.0; // as an older session reads: no beta in its file
    s.evaluation.operatingPoint = p;
    QVERIFY2(ui::ReportText::operatingPoint(s).contains(QLatin1String("the best F1 (0.88)")),
             qPrintable(ui::ReportText::operatingPoint(s)));
}

void TestReportText::headline_data()
{
    QTest::addColumn<QString>("category");
    QTest::addColumn<int>("maxFrames");
    QTest::addColumn<QString>("expected");
    const QString rest = QStringLiteral(
        " the student finds 87 % of the %1 at 93 % precision; the teacher 41 % at 80 %; "
        "motion 90 % at 95 %. Before self-training (round 1) the student found 70 % at 88 %.");
    QTest::newRow("people, held out")
        << "person" << 480
        << QStringLiteral("On 13 verified frames (from frame 480 on, never seen in training)") +
               rest.arg(QStringLiteral("people"));
    // Trained on the whole video: the verified frames may have been seen, and it must not say
    // otherwise.
    QTest::newRow("faces, whole video")
        << "face" << 0
        << QStringLiteral("On 13 verified frames (from frame 480 on)") +
               rest.arg(QStringLiteral("objects"));
}

void TestReportText::headline()
{
    QFETCH(QString, category);
    QFETCH(int, maxFrames);
    QFETCH(QString, expected);
    app::Session s;
    s.capture.maxFrames = maxFrames;
    tests::trackerEvaluation(s);
    s.evaluation.verified = tests::verifiedRounds();
    QCOMPARE(ui::ReportText::headline(s, category.toStdString()), expected);
}

void TestReportText::words_data()
{
    QTest::addColumn<int>("n");
    QTest::addColumn<QString>("ordinal");
    QTest::addColumn<QString>("nodes");
    QTest::addColumn<QString>("every");
    const std::tuple<int, const char *, const char *, const char *> rows[] = {
        {1, "1st", "1 node", "every frame"},
        {2, "2nd", "2 nodes", "every 2nd frame"},
        {3, "3rd", "3 nodes", "every 3rd frame"},
        {4, "4th", "4 nodes", "every 4th frame"},
        {11, "11th", "11 nodes", "every 11th frame"},
        {12, "12th", "12 nodes", "every 12th frame"},
        {13, "13th", "13 nodes", "every 13th frame"},
        {21, "21st", "21 nodes", "every 21st frame"},
        {22, "22nd", "22 nodes", "every 22nd frame"},
        {101, "101st", "101 nodes", "every 101st frame"},
        {111, "111th", "111 nodes", "every 111th frame"},
        {112, "112th", "112 nodes", "every 112th frame"},
        {0, "0th", "0 nodes", "every frame"}};
    for (const auto &[n, ordinal, nodes, every] : rows)
        QTest::newRow(ordinal) << n << QString::fromLatin1(ordinal) << QString::fromLatin1(nodes)
                               << QString::fromLatin1(every);
}

void TestReportText::words()
{
    QFETCH(int, n);
    QFETCH(QString, ordinal);
    QFETCH(QString, nodes);
    QFETCH(QString, every);
    QCOMPARE(ui::ReportText::ordinal(n), ordinal);
    QCOMPARE(ui::ReportText::count(n, QStringLiteral("node"), QStringLiteral("nodes")), nodes);
    QCOMPARE(ui::ReportText::everyNth(n), every);
}

void TestReportText::trainingFacts()
{
    app::Session s;
    QCOMPARE(ui::ReportText::trainingFacts(s), QString());
    tests::stoppedEarly(s);
    QCOMPARE(ui::ReportText::trainingFacts(s),
             QStringLiteral("Trained 25 of at most 40 epochs on 3 devices in 297 s; it stopped "
                            "early, since no epoch after the 15th lowered the validation loss. "
                            "The student keeps the weights of epoch 15, the one with the lowest "
                            "validation loss."));
    s.training.state = app::TrainingRecord::State::Stopped;
    s.training.keptEpoch = 0;
    QVERIFY2(ui::ReportText::trainingFacts(s).contains(
                 QStringLiteral("it was stopped before the last epoch. The student keeps the "
                                "weights of the last epoch.")),
             qPrintable(ui::ReportText::trainingFacts(s)));
}

void TestReportText::glossary()
{
    // Every term the report uses once, in alphabetical order, each with a meaning.
    const QList<QStringList> rows = ui::ReportText::glossary();
    QVERIFY(rows.size() > 10);
    QStringList terms;
    for (const QStringList &row : rows.mid(1)) {
        QCOMPARE(row.size(), 2);
        QVERIFY2(row[1].size() > 20, qPrintable(row[0]));
        terms << row[0];
    }
    QStringList sorted = terms;
    std::sort(sorted.begin(), sorted.end(), [](const QString &a, const QString &b) {
        return a.compare(b, Qt::CaseInsensitive) < 0;
    });
    QCOMPARE(terms, sorted);
    QCOMPARE(QSet<QString>(terms.begin(), terms.end()).size(), terms.size());
}

QTEST_MAIN(TestReportText)
#include "tst_reporttext.moc"
