// Driver helpers of the kernel suite, shared by the element and signal apps:
// options, inputs, device buffers, timing, the error measure and the report.
// Each app's src/main.cu includes it once; CMakeLists.txt puts this folder on its include path.
#pragma once

#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,              \
                   cudaGetErrorString(err_));                                            \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

#include "driver_timing.cuh"

namespace {

struct Options {
  long size;
  long reps;
  long seed;
};

// Parses an integer option value >= `min`; false on junk or out of range.
bool parse_value(const char* text, long min, long* out) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min) return false;
  *out = value;
  return true;
}

bool parse_options(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    bool ok = false;
    if (std::strcmp(argv[i], "--size") == 0) ok = parse_value(argv[i + 1], 1, &opt->size);
    if (std::strcmp(argv[i], "--reps") == 0) ok = parse_value(argv[i + 1], 1, &opt->reps);
    if (std::strcmp(argv[i], "--seed") == 0) ok = parse_value(argv[i + 1], 0, &opt->seed);
    if (!ok) return false;
  }
  return true;
}

// splitmix64: tiny and deterministic, so one seed always gives the same inputs.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

template <class T>
T* to_device(const std::vector<T>& host) {
  T* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return dev;
}

template <class T>
T* device_buffer(size_t count) {
  T* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, count * sizeof(T)));
  return dev;
}

// Copies `count` device values to host[offset...], so several outputs can share one check.
template <class T>
void copy_back(std::vector<T>& host, size_t offset, const T* dev, size_t count) {
  CUDA_CHECK(cudaMemcpy(host.data() + offset, dev, count * sizeof(T), cudaMemcpyDeviceToHost));
}

// Relative error per element; `floor` bounds the denominator so values near zero are judged
// on an absolute scale. NaN anywhere makes the result infinite.
template <class T>
double max_rel_err(const std::vector<T>& got, const std::vector<double>& want, double floor) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = static_cast<double>(got[i]);
    double err = std::fabs(g - want[i]) / std::fmax(std::fabs(want[i]), floor);
    if (std::isnan(err)) return INFINITY;
    worst = std::fmax(worst, err);
  }
  return worst;
}

// Prints the three result lines; returns the process exit code.
template <class T>
int report(float ms, const std::vector<T>& got, const std::vector<double>& want, double floor,
           double tol) {
  double sum = 0.0;
  for (const T& v : got) sum += static_cast<double>(v);
  double err = max_rel_err(got, want, floor);
  bool pass = err <= tol;
  std::printf("time_ms: %.6f\n", ms);
  std::printf("checksum: %.10g\n", sum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);
  return pass ? 0 : 1;
}

}  // namespace
