// The elements the runtime state check changes and compares: float, double, half and bfloat16
// (IEEE binary16 and the upper half of a binary32). Pure, so that tests/test_runtime_headers.py
// compiles it on any machine and checks the conversions against every half and bfloat16 value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace nvcc_opt {

// The element kind of a pointer's pointee, as written in a demangled signature with qualifiers
// and spaces removed ("float", "__half2", "__nv_bfloat16"): "float", "double", "half",
// "bfloat16", or "" for any other (integers, structs: never changed, compared bit for bit).
inline std::string element_kind(const std::string& pointee)
{
    for (const char* t : {"float", "float2", "float4"}) {
        if (pointee == t) {
            return "float";
        }
    }
    for (const char* t : {"double", "double2", "double4"}) {
        if (pointee == t) {
            return "double";
        }
    }
    for (const char* t : {"__half", "__half2", "half", "half2"}) {
        if (pointee == t) {
            return "half";
        }
    }
    for (const char* t : {"__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16", "nv_bfloat162"}) {
        if (pointee == t) {
            return "bfloat16";
        }
    }
    return "";
}

// A kind element_kind returns, resolved once per allocation: the loops over its elements below
// branch on this, not on the name.
enum class Element { kOther, kFloat, kDouble, kHalf, kBfloat16 };

inline Element element_of(const std::string& kind)
{
    if (kind == "float") {
        return Element::kFloat;
    }
    if (kind == "double") {
        return Element::kDouble;
    }
    if (kind == "half") {
        return Element::kHalf;
    }
    return kind == "bfloat16" ? Element::kBfloat16 : Element::kOther;
}

// Bytes of one element; 0 for any other kind.
inline size_t element_width(Element kind)
{
    switch (kind) {
    case Element::kFloat:
        return 4;
    case Element::kDouble:
        return 8;
    case Element::kHalf:
    case Element::kBfloat16:
        return 2;
    default:
        return 0;
    }
}

inline float half_to_float(uint16_t h)
{
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {  // zero and subnormals: mant * 2^-24
        float f = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -f : f;
    }
    uint32_t bits = exp == 31 ? sign | 0x7f800000u | (mant << 13)
                              : sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Round to nearest, ties to even, as the GPU's __float2half_rn.
inline uint16_t float_to_half(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) {
        return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    }
    int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 31) {
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (e <= 0) {  // a half subnormal (or zero)
        if (e < -10) {
            return static_cast<uint16_t>(sign);
        }
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t m = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        m += (rest > halfway || (rest == halfway && (m & 1u))) ? 1u : 0u;
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    h += (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ? 1u : 0u;  // a carry is right
    return static_cast<uint16_t>(h);
}

inline float bfloat16_to_float(uint16_t b)
{
    uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t float_to_bfloat16(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays NaN
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

// Element i of `data` of kind `kind` (element_width(kind) != 0), as a double.
inline double element_at(const unsigned char* data, size_t i, Element kind)
{
    if (kind == Element::kDouble) {
        double x;
        std::memcpy(&x, data + i * 8, 8);
        return x;
    }
    if (kind == Element::kFloat) {
        float x;
        std::memcpy(&x, data + i * 4, 4);
        return x;
    }
    uint16_t h;
    std::memcpy(&h, data + i * 2, 2);
    return kind == Element::kHalf ? half_to_float(h) : bfloat16_to_float(h);
}

// Store `value` as element i of kind `kind`, rounded to nearest.
inline void set_element(unsigned char* data, size_t i, Element kind, double value)
{
    if (kind == Element::kDouble) {
        std::memcpy(data + i * 8, &value, 8);
        return;
    }
    float f = static_cast<float>(value);
    if (kind == Element::kFloat) {
        std::memcpy(data + i * 4, &f, 4);
        return;
    }
    uint16_t h = kind == Element::kHalf ? float_to_half(f) : float_to_bfloat16(f);
    std::memcpy(data + i * 2, &h, 2);
}

// The comparison's relative tolerance for a kind: the configured one, but never under 2^-9 for a
// half or 2^-6 for a bfloat16 (two to four units in the last place): a candidate that rounds a
// float result to the output type after reordered arithmetic differs from the original by one
// such unit, while a result computed from inputs the check changed (by 6% to 12%) differs by far
// more.
inline double element_tolerance(Element kind, double rtol)
{
    if (kind == Element::kHalf) {
        return std::max(rtol, 1.0 / 512);
    }
    if (kind == Element::kBfloat16) {
        return std::max(rtol, 1.0 / 64);
    }
    return rtol;
}

}  // namespace nvcc_opt
