#include "core/planobjective.h"

#include "core/numbertext.h"

#include <charconv>
#include <cmath>
#include <initializer_list>
#include <vector>

namespace edgetrain::core {

namespace {

std::string_view trimmed(std::string_view s)
{
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && space(s.back()))
        s.remove_suffix(1);
    return s;
}

std::string lowered(std::string_view s)
{
    std::string out(s);
    for (char &c : out)
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
    return out;
}

std::vector<std::string_view> split(std::string_view s, char by)
{
    std::vector<std::string_view> parts;
    for (std::size_t at = 0;;) {
        const std::size_t next = s.find(by, at);
        parts.push_back(s.substr(at, next == std::string_view::npos ? next : next - at));
        if (next == std::string_view::npos)
            return parts;
        at = next + 1;
    }
}

/** The parts one after the other (GCC 12 warns falsely on "literal" + std::string). */
std::string joined(std::initializer_list<std::string_view> parts)
{
    std::string out;
    for (const std::string_view p : parts)
        out += p;
    return out;
}

/** The whole of `text` (blanks around it aside) as a number, C locale. */
std::optional<double> number(std::string_view text)
{
    text = trimmed(text);
    if (!text.empty() && text.front() == '+')
        text.remove_prefix(1);
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

} // namespace

std::optional<PlanObjective> PlanObjective::parse(std::string_view text, std::string *error)
{
    PlanObjective o;
    const std::string t = lowered(trimmed(text));
    if (t == "time")
        o.kind = Kind::Time;
    else if (t == "power")
        o.kind = Kind::Power;
    else if (t == "energy")
        o.kind = Kind::Energy;
    else if (t == "edp")
        o.kind = Kind::Edp;
    else if (t.rfind("mix:", 0) == 0) {
        o.kind = Kind::Mix;
        o.time_weight = 0.0;
        double sum = 0.0;
        for (const std::string_view part : split(std::string_view(t).substr(4), ',')) {
            if (part.empty())
                continue;
            const auto kv = split(part, '=');
            const std::optional<double> w = kv.size() == 2 ? number(kv[1]) : std::nullopt;
            if (!w || !(*w >= 0.0) || !std::isfinite(*w)) {
                *error = joined({"'", part, "' in objective '", text,
                                 "' is not NAME=WEIGHT with a weight of 0 or more"});
                return std::nullopt;
            }
            const std::string_view name = trimmed(kv[0]);
            if (name == "time")
                o.time_weight = *w;
            else if (name == "power")
                o.power_weight = *w;
            else if (name == "energy")
                o.energy_weight = *w;
            else if (name == "edp")
                o.edp_weight = *w;
            else {
                *error = joined(
                    {"objective '", text, "': '", name, "' is not time, power, energy or edp"});
                return std::nullopt;
            }
            sum += *w;
        }
        if (!(sum > 0.0)) {
            *error = joined({"objective '", text, "' gives no weight above 0"});
            return std::nullopt;
        }
    } else {
        *error = joined({"the objective must be time, power, energy, edp or "
                         "mix:time=W,power=W,energy=W,edp=W, not '",
                         text, "'"});
        return std::nullopt;
    }
    return o;
}

std::string PlanObjective::name() const
{
    switch (kind) {
    case Kind::Time:
        return "time";
    case Kind::Power:
        return "power";
    case Kind::Energy:
        return "energy";
    case Kind::Edp:
        return "edp";
    case Kind::Mix:
        break;
    }
    std::string text = "mix:";
    const std::pair<const char *, double> weights[] = {{"time", time_weight},
                                                       {"power", power_weight},
                                                       {"energy", energy_weight},
                                                       {"edp", edp_weight}};
    bool first = true;
    for (const auto &[n, w] : weights)
        if (w > 0) {
            text += joined({first ? "" : ",", n, "=", NumberText::format(w)});
            first = false;
        }
    return text;
}

bool PlanObjective::needsPower() const
{
    return kind == Kind::Power || kind == Kind::Energy || kind == Kind::Edp || max_watts > 0.0 ||
           (kind == Kind::Mix && (power_weight > 0 || energy_weight > 0 || edp_weight > 0));
}

} // namespace edgetrain::core
