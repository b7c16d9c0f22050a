// Driver helpers of the kernel suite, shared by the apps with their own options and checks:
// the CUDA error check, options and their values, and the splitmix64 generator.
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

struct Options {
  long long size;
  long long reps;
  long long seed;
};

// Reads "--size N --reps N --seed N" (any order, each optional; size at most max_size);
// false on anything else.
static bool parse_options(int argc, char** argv, Options* opt, long long max_size) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    const char* value = argv[i + 1];
    bool ok = false;
    if (std::strcmp(argv[i], "--size") == 0) ok = parse_value(value, 1, max_size, &opt->size);
    else if (std::strcmp(argv[i], "--reps") == 0) ok = parse_value(value, 1, 1000000, &opt->reps);
    else if (std::strcmp(argv[i], "--seed") == 0) ok = parse_value(value, 0, INT64_MAX, &opt->seed);
    if (!ok) return false;
  }
  return true;
}

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
