#include "demomaterial.h"

#include "core/fieldcheck.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <limits>

namespace edgetrain::gui {

namespace {

/** Takes the fields of one object out by name, remembering the first problem; what is left
 *  over at the end is a field nobody reads. */
class Fields
{
public:
    Fields(QJsonObject o, QString where, QString *error)
        : m_o(std::move(o)), m_where(std::move(where)), m_error(error)
    {}
    QJsonValue take(const QString &key, bool (QJsonValue::*is)() const, const char *expected)
    {
        const QJsonValue v = m_o.take(key);
        if (v.isUndefined())
            fail(core::FieldCheck::missing(field(key)));
        else if (!(v.*is)())
            fail(core::FieldCheck::mustBe(field(key), expected));
        return v;
    }
    QString text(const QString &key)
    {
        return take(key, &QJsonValue::isString, "a string").toString();
    }
    int integer(const QString &key)
    {
        const QJsonValue v = take(key, &QJsonValue::isDouble, "an integer");
        if (v.isDouble() && !(core::FieldCheck::isIntegral(v.toDouble()) &&
                              std::abs(v.toDouble()) <= std::numeric_limits<int>::max()))
            fail(core::FieldCheck::mustBe(field(key), "an integer"));
        return v.toInt();
    }
    double number(const QString &key)
    {
        return take(key, &QJsonValue::isDouble, "a number").toDouble();
    }
    Fields object(const QString &key)
    {
        return Fields(take(key, &QJsonValue::isObject, "an object").toObject(),
                      QString::fromStdString(field(key)), m_error);
    }
    /** Drops a field of free text (notes for the reader) if it is there. */
    void skip(const QString &key)
    {
        if (m_o.contains(key))
            take(key, &QJsonValue::isObject, "an object");
    }
    /** Refuses whatever was not taken. */
    void finish()
    {
        if (!m_o.isEmpty())
            fail("unknown field \"" + field(m_o.keys().first()) + "\"");
    }

private:
    std::string field(const QString &key) const
    {
        return (m_where.isEmpty() ? key : m_where + QLatin1Char('.') + key).toStdString();
    }
    void fail(const std::string &problem)
    {
        if (m_error->isEmpty())
            *m_error = QString::fromStdString(problem);
    }
    QJsonObject m_o;
    QString m_where;
    QString *m_error;
};

} // namespace

std::optional<DemoMaterial> DemoMaterial::read(const QString &path, const QString &root,
                                               QString *error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error =
            QStringLiteral("cannot read the demo's material '%1': %2").arg(path, f.errorString());
        return std::nullopt;
    }
    QJsonParseError parse{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &parse);
    if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
        *error =
            QStringLiteral("%1: not a JSON object (%2 at offset %3)")
                .arg(path, parse.error != QJsonParseError::NoError ? parse.errorString()
                                                                   : QStringLiteral("a JSON array"))
                .arg(parse.offset);
        return std::nullopt;
    }
    DemoMaterial m;
    m.file = path;
    QString problem;
    Fields top(doc.object(), {}, &problem);
    Fields capture = top.object(QStringLiteral("capture"));
    m.video = capture.text(QStringLiteral("source"));
    m.teacher = capture.text(QStringLiteral("teacher"));
    m.tracker = capture.text(QStringLiteral("tracker"));
    m.every = capture.integer(QStringLiteral("every"));
    m.labelledFrames = capture.integer(QStringLiteral("max_frames"));
    capture.finish();
    Fields dataset = top.object(QStringLiteral("dataset"));
    m.datasetKind = dataset.text(QStringLiteral("kind"));
    m.frameWidth = dataset.integer(QStringLiteral("frame_width"));
    m.frameEvery = dataset.integer(QStringLiteral("frame_every"));
    dataset.finish();
    Fields plan = top.object(QStringLiteral("plan"));
    m.model = plan.text(QStringLiteral("model"));
    m.epochs = plan.integer(QStringLiteral("epochs"));
    m.batch = plan.integer(QStringLiteral("batch"));
    m.lr = plan.number(QStringLiteral("lr"));
    plan.finish();
    m.videoPackage = top.text(QStringLiteral("source_package"));
    const QString truth = top.text(QStringLiteral("truth"));
    top.skip(QStringLiteral("why"));
    top.finish();
    if (!problem.isEmpty()) {
        *error = path + QStringLiteral(": ") + problem;
        return std::nullopt;
    }
    if (!truth.isEmpty())
        m.truthFile = QDir::cleanPath(QDir(root).absoluteFilePath(truth));
    return m;
}

QString DemoMaterial::defaultFile(QString *root)
{
    // A build runs from <build>/bin and reads the tree it was built from; an installed program
    // never does, even where that tree still exists.
    if (QDir(QCoreApplication::applicationDirPath()) == QDir(QStringLiteral(EDGETRAIN_BIN_DIR))) {
        *root = QStringLiteral(EDGETRAIN_SOURCE_DIR);
        return *root + QStringLiteral("/resources/demo.json");
    }
    *root = QStringLiteral(EDGETRAIN_DATA_DIR);
    return *root + QStringLiteral("/demo.json");
}

} // namespace edgetrain::gui
