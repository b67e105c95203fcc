// libFuzzer target for the control protocol's frame decoder: whatever bytes a peer sends, in
// whatever pieces, the decoder returns frames or fails with a message; it never crashes, never
// reads out of bounds (ASan), never hits undefined behaviour (UBSan).
//
//   cmake --preset fuzz && cmake --build --preset fuzz
//   mkdir -p /tmp/corpus
//   build/fuzz/bin/fuzz_frame -max_total_time=300 /tmp/corpus tests/fuzz/corpus/frame
//
// libFuzzer writes the inputs it finds into the first directory, so the checked-in seeds in
// tests/fuzz/corpus/frame stay as they are (scripts/fuzz.sh runs every target on a copy).

#include "net/protocol/frame.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    using edgetrain::net::FrameDecoder;
    if (size == 0)
        return 0;
    // First byte: how to cut the rest into pieces, and whether a session key is in force.
    const std::uint8_t mode = data[0];
    const QByteArray bytes(reinterpret_cast<const char *>(data + 1), qsizetype(size - 1));
    FrameDecoder decoder(1u << 16);
    if (mode & 0x80)
        decoder.setSessionKey(QByteArrayLiteral("fuzz-session-key"));
    const qsizetype piece = 1 + (mode & 0x3f);
    for (qsizetype at = 0; at < bytes.size(); at += piece) {
        decoder.feed(bytes.mid(at, piece));
        while (auto frame = decoder.next())
            (void)frame->body.size();
        if (decoder.failed())
            break;
    }
    return 0;
}
