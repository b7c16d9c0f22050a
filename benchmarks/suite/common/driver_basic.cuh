// Driver helpers of the kernel suite, shared by the apps with their own options and checks:
// the CUDA error check, option values and the splitmix64 generator.
// Each app's src/main.cu includes it once; CMakeLists.txt puts this folder on its include path.
#pragma once

#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),        \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                         \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

static bool parse_value(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < lo || value > hi) return false;
  *out = value;
  return true;
}

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
