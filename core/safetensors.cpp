#include "safetensors.h"

#include "error.h"
#include "fileio.h"

#include <bit>
#include <cstring>
#include <fstream>

namespace edgetrain::core {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian port needs byte swapping here");

namespace {

std::int64_t dtypeSize(const std::string &dtype)
{
    if (dtype == "F64" || dtype == "I64" || dtype == "U64")
        return 8;
    if (dtype == "F32" || dtype == "I32" || dtype == "U32")
        return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
        return 2;
    if (dtype == "I8" || dtype == "U8" || dtype == "BOOL")
        return 1;
    return 0;
}

std::string shapeText(const std::vector<std::int64_t> &dims)
{
    return Shape(dims).toString();
}

} // namespace

Safetensors Safetensors::read(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw IoError("cannot open weights file '" + path + "'");
    in.seekg(0, std::ios::end);
    const auto fileSize = std::uint64_t(in.tellg());
    in.seekg(0);
    auto fail = [&](const std::string &what) -> FormatError {
        return FormatError("'" + path + "' is not a valid safetensors file: " + what);
    };
    if (fileSize < 8)
        throw fail("shorter than the 8-byte header length");
    unsigned char lenBytes[8];
    in.read(reinterpret_cast<char *>(lenBytes), 8);
    std::uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i)
        headerLen = (headerLen << 8) | lenBytes[i];
    if (headerLen == 0 || headerLen > 100u * 1024 * 1024 || headerLen > fileSize - 8)
        throw fail("header length " + std::to_string(headerLen) + " at offset 0 does not fit the " +
                   std::to_string(fileSize) + "-byte file");
    std::string header(std::size_t(headerLen), '\0');
    if (!in.read(header.data(), std::streamsize(headerLen)))
        throw IoError("cannot read the header of '" + path + "'");
    Json doc;
    try {
        doc = Json::parse(header, path + " (header)");
    } catch (const FormatError &e) {
        throw fail(e.what());
    }
    if (!doc.isObject())
        throw fail("the header is not a JSON object");
    const std::uint64_t dataSize = fileSize - 8 - headerLen;
    std::vector<std::uint8_t> data(static_cast<std::size_t>(dataSize));
    if (dataSize && !in.read(reinterpret_cast<char *>(data.data()), std::streamsize(dataSize)))
        throw IoError("cannot read the data of '" + path + "'");

    Safetensors st;
    for (const auto &[name, info] : doc.toObject()) {
        if (name == "__metadata__") {
            if (!info.isObject())
                throw fail("__metadata__ is not an object");
            for (const auto &[k, v] : info.toObject()) {
                if (!v.isString())
                    throw fail("__metadata__." + k + " is not a string");
                st.m_metadata[k] = v.toString();
            }
            continue;
        }
        const Json *dtype = info.find("dtype");
        const Json *shape = info.find("shape");
        const Json *offsets = info.find("data_offsets");
        if (!dtype || !dtype->isString() || !shape || !shape->isArray() || !offsets ||
            !offsets->isArray() || offsets->toArray().size() != 2)
            throw fail("tensor '" + name + "' needs dtype, shape and data_offsets [begin, end]");
        Entry e;
        e.dtype = dtype->toString();
        const std::int64_t elementSize = dtypeSize(e.dtype);
        if (!elementSize)
            throw fail("tensor '" + name + "' has unknown dtype '" + e.dtype + "'");
        std::uint64_t count = 1;
        for (const Json &d : shape->toArray()) {
            if (!d.isNumber() || d.toDouble() < 0 || d.toDouble() > 1e12 ||
                d.toDouble() != double(std::int64_t(d.toDouble())))
                throw fail("tensor '" + name + "' has an invalid shape entry");
            e.shape.push_back(std::int64_t(d.toDouble()));
            // [2^32, 2^32] would wrap to 0 elements and pass as an empty tensor.
            std::uint64_t bytes = 0;
            if (__builtin_mul_overflow(count, std::uint64_t(e.shape.back()), &count) ||
                __builtin_mul_overflow(count, std::uint64_t(elementSize), &bytes))
                throw fail("tensor '" + name + "' has a shape whose size overflows (dimension " +
                           std::to_string(e.shape.size() - 1) + " = " +
                           std::to_string(e.shape.back()) + ")");
        }
        const Json &b = offsets->toArray()[0];
        const Json &en = offsets->toArray()[1];
        if (!b.isNumber() || !en.isNumber() || b.toDouble() < 0 || en.toDouble() < b.toDouble() ||
            en.toDouble() > double(dataSize))
            throw fail("tensor '" + name + "' has data_offsets outside the " +
                       std::to_string(dataSize) + "-byte data section");
        const auto begin = std::uint64_t(b.toDouble()), end = std::uint64_t(en.toDouble());
        if (end - begin != count * std::uint64_t(elementSize))
            throw fail("tensor '" + name + "' of shape " + shapeText(e.shape) + " and dtype " +
                       e.dtype + " needs " + std::to_string(count * std::uint64_t(elementSize)) +
                       " bytes but data_offsets give " + std::to_string(end - begin));
        e.bytes.assign(data.begin() + std::ptrdiff_t(begin), data.begin() + std::ptrdiff_t(end));
        st.m_entries.emplace(name, std::move(e));
    }
    return st;
}

void Safetensors::write(const std::string &path) const
{
    // Offsets in name order (std::map), data packed in the same order.
    Json header;
    if (!m_metadata.empty()) {
        Json meta;
        for (const auto &[k, v] : m_metadata)
            meta.set(k, v);
        header.set("__metadata__", std::move(meta));
    }
    std::uint64_t offset = 0;
    for (const auto &[name, e] : m_entries) {
        Json shape = Json::array();
        for (auto d : e.shape)
            shape.push(d);
        Json offsets = Json::array();
        offsets.push(offset).push(offset + e.bytes.size());
        Json info;
        info.set("dtype", e.dtype)
            .set("shape", std::move(shape))
            .set("data_offsets", std::move(offsets));
        header.set(name, std::move(info));
        offset += e.bytes.size();
    }
    std::string text = header.dump();
    while ((8 + text.size()) % 8)
        text += ' '; // the format allows trailing spaces; keeps the data 8-byte aligned

    char len[8];
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i, n >>= 8)
        len[i] = static_cast<char>(n & 0xff);
    // The tensors' bytes are written where they are, not copied into one buffer first.
    std::vector<std::string_view> pieces{{len, 8}, text};
    for (const auto &[name, e] : m_entries)
        pieces.emplace_back(reinterpret_cast<const char *>(e.bytes.data()), e.bytes.size());
    writeFileAtomically(path, pieces);
}

void Safetensors::addFloat(const std::string &name, const Shape &shape, const float *data)
{
    Entry e;
    e.dtype = "F32";
    e.shape = shape.dims();
    e.bytes.resize(std::size_t(shape.numel()) * sizeof(float));
    if (!e.bytes.empty())
        std::memcpy(e.bytes.data(), data, e.bytes.size());
    m_entries[name] = std::move(e);
}

void Safetensors::addInt64(const std::string &name, std::int64_t value)
{
    Entry e;
    e.dtype = "I64";
    e.bytes.resize(8);
    std::memcpy(e.bytes.data(), &value, 8);
    m_entries[name] = std::move(e);
}

const Safetensors::Entry *Safetensors::find(const std::string &name) const
{
    const auto it = m_entries.find(name);
    return it == m_entries.end() ? nullptr : &it->second;
}

void Safetensors::saveModel(Model &model, const std::string &path,
                            const std::map<std::string, std::string> &extra)
{
    Safetensors st;
    for (const auto &p : model.parameters())
        st.addFloat(p.name, p.parameter->value.shape(), p.parameter->value.data());
    for (const auto &b : model.buffers()) {
        if (b.buffer.tensor)
            st.addFloat(b.name, b.buffer.tensor->shape(), b.buffer.tensor->data());
        else
            st.addInt64(b.name, *b.buffer.counter);
    }
    st.metadata()["format"] = "pt";
    st.metadata()["edgetrain.model_spec"] = model.spec().toJson().dump();
    for (const auto &[key, value] : extra)
        st.metadata()[key] = value;
    st.write(path);
}

void Safetensors::loadModel(Model &model, const std::string &path)
{
    const Safetensors st = read(path);
    // Check everything first, copy after: a bad file leaves the model as it was.
    std::map<std::string, bool> used;
    std::vector<std::pair<const Entry *, Tensor *>> floats;
    std::vector<std::pair<const Entry *, std::int64_t *>> counters;
    auto loadFloat = [&](const std::string &name, Tensor &target) {
        const Entry *e = st.find(name);
        if (!e)
            throw FormatError("'" + path + "' has no tensor '" + name + "' that model '" +
                              model.spec().name() +
                              "' needs (is it a weights file of this model?)");
        if (e->dtype != "F32")
            throw FormatError("'" + path + "': tensor '" + name + "' is " + e->dtype +
                              ", expected F32");
        if (Shape(e->shape) != target.shape())
            throw FormatError("'" + path + "': tensor '" + name + "' has shape " +
                              shapeText(e->shape) + ", model '" + model.spec().name() +
                              "' expects " + target.shape().toString());
        floats.emplace_back(e, &target);
        used[name] = true;
    };
    for (const auto &p : model.parameters())
        loadFloat(p.name, p.parameter->value);
    for (const auto &b : model.buffers()) {
        if (b.buffer.tensor) {
            loadFloat(b.name, *b.buffer.tensor);
            continue;
        }
        const Entry *e = st.find(b.name);
        if (!e)
            continue; // counters are optional (older PyTorch files lack them)
        if (e->dtype != "I64" || e->bytes.size() != 8)
            throw FormatError("'" + path + "': tensor '" + b.name + "' should be one I64 value");
        counters.emplace_back(e, b.buffer.counter);
        used[b.name] = true;
    }
    for (const auto &[name, e] : st.entries())
        if (!used.count(name))
            throw FormatError("'" + path + "' holds tensor '" + name + "' that model '" +
                              model.spec().name() + "' does not have");
    for (const auto &[e, target] : floats)
        std::memcpy(target->data(), e->bytes.data(), e->bytes.size());
    for (const auto &[e, counter] : counters)
        std::memcpy(counter, e->bytes.data(), 8);
}

} // namespace edgetrain::core
