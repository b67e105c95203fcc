#pragma once

#include "json.h"
#include "model.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * The safetensors format: an 8-byte little-endian header length, a JSON header mapping each
 * tensor name to {dtype, shape, data_offsets}, then the raw little-endian data. Readers in
 * Python (safetensors, PyTorch) open the files EdgeTrain writes and the other way round.
 */
class Safetensors
{
public:
    struct Entry
    {
        std::string dtype; // "F32", "I64", ...
        std::vector<std::int64_t> shape;
        std::vector<std::uint8_t> bytes;
    };

    /**
     * Reads and validates a whole file. Throws IoError if it cannot be read, FormatError naming
     * the file and the field or offset if the header or the offsets are malformed.
     */
    static Safetensors read(const std::string &path);
    /** Writes atomically (writeFileAtomically): a crash leaves the old file intact. */
    void write(const std::string &path) const;

    void addFloat(const std::string &name, const Shape &shape, const float *data);
    void addInt64(const std::string &name, std::int64_t value);

    const std::map<std::string, Entry> &entries() const { return m_entries; }
    const Entry *find(const std::string &name) const;
    std::map<std::string, std::string> &metadata() { return m_metadata; }
    const std::map<std::string, std::string> &metadata() const { return m_metadata; }

    /** Saves every parameter and buffer of the model (metadata: the ModelSpec as JSON, and
     *  `extra`, e.g. a detector's operating threshold). */
    static void saveModel(Model &model, const std::string &path,
                          const std::map<std::string, std::string> &extra = {});
    /**
     * Loads every parameter and buffer of the model by name. Throws FormatError if a tensor is
     * missing, has another shape or dtype, or if the file holds tensors the model does not have.
     */
    static void loadModel(Model &model, const std::string &path);

private:
    std::map<std::string, Entry> m_entries;
    std::map<std::string, std::string> m_metadata;
};

} // namespace edgetrain::core
