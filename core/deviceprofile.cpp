#include "deviceprofile.h"

#include "error.h"
#include "fieldcheck.h"
#include "numbertext.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgetrain::core {

namespace {

constexpr std::int64_t kMaxBytes = std::int64_t(1) << 50; // 1 PiB: nothing real is larger

/** Reads the fields of a profile, naming the file and the field in every error. */
class Reader
{
public:
    Reader(const Json &object, std::string source, std::string prefix = {})
        : m_object(object), m_source(std::move(source)), m_prefix(std::move(prefix))
    {
        if (!object.isObject())
            fail(m_prefix.empty() ? "expected a JSON object"
                                  : FieldCheck::mustBe(trimmedPrefix(), "an object"));
    }

    [[noreturn]] void fail(const std::string &what) const
    {
        throw SpecError(m_source + ": " + what);
    }

    void allowOnly(std::initializer_list<std::string_view> keys) const
    {
        for (const auto &[key, value] : m_object.toObject())
            if (std::find(keys.begin(), keys.end(), key) == keys.end())
                fail("unknown field \"" + m_prefix + key + "\"");
    }

    const Json &required(std::string_view key) const
    {
        const Json *v = m_object.find(key);
        if (!v)
            fail(FieldCheck::missing(m_prefix + std::string(key)));
        return *v;
    }

    std::string text(std::string_view key, bool optional = false) const
    {
        if (optional && !m_object.find(key))
            return {};
        const Json &v = required(key);
        if (!v.isString() || v.toString().empty())
            fail(FieldCheck::mustBe(field(key), "a non-empty string"));
        return v.toString();
    }

    std::int64_t integer(std::string_view key, std::int64_t lo, std::int64_t hi) const
    {
        const Json &v = required(key);
        if (!v.isNumber() || !FieldCheck::isIntegral(v.toDouble()))
            fail(FieldCheck::mustBe(field(key), FieldCheck::integerFrom(lo, hi), got(v)));
        const std::int64_t i = v.toInt();
        if (const std::string problem = FieldCheck::integerIn(field(key), i, lo, hi);
            !problem.empty())
            fail(problem);
        return i;
    }

    double number(std::string_view key, double lo, double hi) const
    {
        const Json &v = required(key);
        if (!v.isNumber())
            fail(FieldCheck::mustBe(field(key), FieldCheck::numberFrom(lo, hi), got(v)));
        const double d = v.toDouble();
        if (const std::string problem = FieldCheck::numberIn(field(key), d, lo, hi);
            !problem.empty())
            fail(problem);
        return d;
    }

    std::string field(std::string_view key) const { return m_prefix + std::string(key); }

private:
    static std::string got(const Json &v)
    {
        if (v.isString())
            return "\"" + v.toString() + "\"";
        if (v.isNumber())
            return NumberText::format(v.toDouble());
        return v.dump();
    }
    std::string trimmedPrefix() const { return m_prefix.substr(0, m_prefix.size() - 1); }

    const Json &m_object;
    std::string m_source;
    std::string m_prefix;
};

} // namespace

double DeviceProfile::watts(double utilisation) const
{
    const double u = std::clamp(utilisation, 0.0, 1.0);
    if (power_curve.size() < 2)
        return idle_watts + (full_watts - idle_watts) * u;
    for (std::size_t i = 1; i < power_curve.size(); ++i) {
        const auto &[u0, w0] = power_curve[i - 1];
        const auto &[u1, w1] = power_curve[i];
        if (u <= u1)
            return u1 > u0 ? w0 + (w1 - w0) * (u - u0) / (u1 - u0) : w1;
    }
    return power_curve.back().second;
}

double DeviceProfile::watts(double utilisation, double mhz) const
{
    const double w = watts(utilisation);
    if (mhz <= 0.0 || clock_mhz <= 0 || mhz >= double(clock_mhz))
        return w;
    const double idle = watts(0.0);
    return idle + (w - idle) * std::pow(mhz / double(clock_mhz), frequency_exponent);
}

bool DeviceProfile::answersTo(const std::string &wanted) const
{
    return wanted == id || std::find(aliases.begin(), aliases.end(), wanted) != aliases.end();
}

Json DeviceProfile::toJson() const
{
    Json j;
    j.set("format", kFormat).set("id", id).set("name", name);
    Json a = Json::array();
    for (const std::string &alias : aliases)
        a.push(alias);
    j.set("aliases", std::move(a));
    j.set("arch", arch).set("cpu_model", cpu_model).set("cores", cores);
    j.set("clock_mhz", clock_mhz).set("core_gflops", core_gflops);
    j.set("ram_bytes", ram_bytes).set("os_reserved_bytes", os_reserved_bytes);
    j.set("link_bits_per_second", link_bits_per_second);
    Json power;
    power.set("idle_watts", idle_watts).set("full_watts", full_watts);
    if (!power_curve.empty()) {
        Json curve = Json::array();
        for (const auto &[u, w] : power_curve) {
            Json point = Json::array();
            point.push(u).push(w);
            curve.push(std::move(point));
        }
        power.set("curve", std::move(curve));
    }
    if (frequency_exponent != 1.0)
        power.set("frequency_exponent", frequency_exponent);
    j.set("power", std::move(power));
    Json s = Json::object();
    for (const auto &[figure, source] : sources)
        s.set(figure, source);
    j.set("sources", std::move(s));
    return j;
}

DeviceProfile DeviceProfile::fromJson(const Json &json, const std::string &source)
{
    const Reader r(json, source);
    r.allowOnly({"format", "id", "name", "aliases", "arch", "cpu_model", "cores", "clock_mhz",
                 "core_gflops", "ram_bytes", "os_reserved_bytes", "link_bits_per_second", "power",
                 "sources"});
    if (const std::string format = r.text("format"); format != kFormat)
        r.fail(
            FieldCheck::mustBe("format", std::string("\"") + kFormat + "\"", "\"" + format + "\""));
    DeviceProfile p;
    p.id = r.text("id");
    if (p.id.find_first_of(" ,:/") != std::string::npos)
        r.fail(FieldCheck::mustBe("id", "a name without spaces, commas, colons or slashes",
                                  "\"" + p.id + "\""));
    p.name = r.text("name");
    if (const Json *aliases = json.find("aliases")) {
        if (!aliases->isArray())
            r.fail(FieldCheck::mustBe("aliases", "an array of names"));
        for (std::size_t i = 0; i < aliases->toArray().size(); ++i) {
            const Json &a = aliases->toArray()[i];
            if (!a.isString() || a.toString().empty())
                r.fail(
                    FieldCheck::mustBe("aliases[" + std::to_string(i) + "]", "a non-empty string"));
            p.aliases.push_back(a.toString());
        }
    }
    p.arch = r.text("arch");
    p.cpu_model = r.text("cpu_model");
    p.cores = int(r.integer("cores", 1, 1024));
    p.clock_mhz = int(r.integer("clock_mhz", 1, 100000));
    p.core_gflops = r.number("core_gflops", 1e-3, 1e5);
    p.ram_bytes = r.integer("ram_bytes", 1 << 20, kMaxBytes);
    p.os_reserved_bytes = r.integer("os_reserved_bytes", 0, p.ram_bytes - (1 << 20));
    p.link_bits_per_second = r.integer("link_bits_per_second", 1000, std::int64_t(1e12));

    const Reader power(r.required("power"), source, "power.");
    power.allowOnly({"idle_watts", "full_watts", "curve", "frequency_exponent"});
    p.idle_watts = power.number("idle_watts", 0.0, 1e5);
    p.full_watts = power.number("full_watts", p.idle_watts, 1e5);
    if (r.required("power").find("frequency_exponent"))
        p.frequency_exponent = power.number("frequency_exponent", 0.0, 4.0);
    if (const Json *curve = r.required("power").find("curve")) {
        if (!curve->isArray() || curve->toArray().size() < 2)
            r.fail(FieldCheck::mustBe("power.curve", "an array of at least two [utilisation, "
                                                     "watts] pairs"));
        double last = -1.0;
        for (std::size_t i = 0; i < curve->toArray().size(); ++i) {
            const Json &point = curve->toArray()[i];
            const std::string where = "power.curve[" + std::to_string(i) + "]";
            if (!point.isArray() || point.toArray().size() != 2 || !point.toArray()[0].isNumber() ||
                !point.toArray()[1].isNumber())
                r.fail(FieldCheck::mustBe(where, "a [utilisation, watts] pair of numbers"));
            const double u = point.toArray()[0].toDouble();
            const double w = point.toArray()[1].toDouble();
            if (!(u > last) || u < 0.0 || u > 1.0)
                r.fail(FieldCheck::mustBe(where + "[0]",
                                          "a utilisation from 0 to 1, above the previous one",
                                          NumberText::format(u)));
            if (const std::string problem = FieldCheck::numberIn(where + "[1]", w, 0.0, 1e5);
                !problem.empty())
                r.fail(problem);
            p.power_curve.emplace_back(u, w);
            last = u;
        }
        if (p.power_curve.front().first != 0.0 || p.power_curve.back().first != 1.0)
            r.fail(FieldCheck::mustBe("power.curve", "a curve from utilisation 0 to 1"));
    }

    const Reader sources(r.required("sources"), source, "sources.");
    for (const auto &[figure, text] : r.required("sources").toObject()) {
        if (!text.isString() || text.toString().empty())
            r.fail(FieldCheck::mustBe("sources." + figure, "a non-empty string"));
        p.sources[figure] = text.toString();
    }
    // Every figure a lab or a plan rests on says where it comes from.
    for (const char *figure : {"core_gflops", "ram_bytes", "link_bits_per_second", "power"})
        if (!p.sources.count(figure))
            r.fail(FieldCheck::missing(std::string("sources.") + figure));
    return p;
}

DeviceProfile DeviceProfile::load(const std::string &path)
{
    return fromJson(Json::parseFile(path, "cannot read device profile"), path);
}

} // namespace edgetrain::core
