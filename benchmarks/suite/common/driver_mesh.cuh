// Driver helpers of the kernel suite, shared by the structured-mesh apps:
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

#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    cudaError_t err_ = (call);                                              \
    if (err_ != cudaSuccess) {                                              \
      std::fprintf(stderr, "CUDA error: %s at %s:%d\n",                     \
                   cudaGetErrorString(err_), __FILE__, __LINE__);           \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

#include "driver_timing.cuh"

namespace {

struct Options {
  long size;
  long reps;
  long seed;
};

// Strict decimal parse into [lo, hi]; false on junk or out of range.
bool parse_long(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_options(int argc, char** argv, long max_size, Options* opt) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    const char* key = argv[i];
    const char* val = argv[i + 1];
    bool ok = false;
    if (std::strcmp(key, "--size") == 0) ok = parse_long(val, 1, max_size, &opt->size);
    else if (std::strcmp(key, "--reps") == 0) ok = parse_long(val, 1, 1000000, &opt->reps);
    else if (std::strcmp(key, "--seed") == 0) ok = parse_long(val, 0, 1L << 62, &opt->seed);
    if (!ok) return false;
  }
  return true;
}

// splitmix64: a tiny deterministic generator, doubles in [0,1).
struct Rng {
  uint64_t state;
  double next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

// Relative error with a floor so near-zero reference entries do not dominate.
double max_rel_err(const std::vector<double>& got, const std::vector<double>& ref) {
  double scale = 0.0;
  for (double r : ref) scale = std::fmax(scale, std::fabs(r));
  double floor_abs = 1e-6 * scale + 1e-300;
  double worst = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double err = std::fabs(got[i] - ref[i]) / std::fmax(std::fabs(ref[i]), floor_abs);
    if (!(err <= worst)) worst = err;  // also catches NaN
  }
  return worst;
}

int report(double ms, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  double sum = 0.0;
  for (double v : got) sum += v;
  double err = max_rel_err(got, ref);
  bool pass = err <= tol;
  std::printf("time_ms: %.6f\n", ms);
  std::printf("checksum: %.10g\n", sum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);
  return pass ? 0 : 1;
}

double* to_device(const std::vector<double>& host) {
  double* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(double)));
  CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice));
  return dev;
}

std::vector<double> from_device(const double* dev, size_t n) {
  std::vector<double> host(n);
  CUDA_CHECK(cudaMemcpy(host.data(), dev, n * sizeof(double), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace
