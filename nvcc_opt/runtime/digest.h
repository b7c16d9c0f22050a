// The state check's digest of an allocation's bytes: equal bytes give equal digests in every
// process; any change of a byte, of the length or of the order of words changes it with
// overwhelming likelihood. Four independent 64-bit lanes over 32-byte blocks (a byte-wise FNV-1a
// took about 0.1 s per 64 MiB, twice per allocation per checked call). Pure, so that
// tests/test_runtime_names.py compiles it on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace nvcc_opt {

inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

inline uint64_t content_digest(const unsigned char* data, size_t n)
{
    const uint64_t prime = 0x9E3779B97F4A7C15ull;
    uint64_t lane[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                        0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; ++k) {
            uint64_t w;
            std::memcpy(&w, data + i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * prime;
            lane[k] ^= lane[k] >> 29;
        }
    }
    uint64_t tail = 1469598103934665603ull;  // FNV-1a over the last n % 32 bytes
    for (; i < n; ++i) {
        tail = (tail ^ data[i]) * 1099511628211ull;
    }
    uint64_t h = mix64(n ^ prime);
    for (uint64_t v : {lane[0], lane[1], lane[2], lane[3], tail}) {
        h = mix64(h ^ v) * prime;
    }
    return h;
}

}  // namespace nvcc_opt
