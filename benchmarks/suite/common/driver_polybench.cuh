// Driver helpers of the kernel suite, shared by the dense linear-algebra and stencil apps:
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

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,               \
                   cudaGetErrorString(err_));                                             \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

#include "driver_timing.cuh"

namespace {

struct Options {
  long long size;
  long long reps;
  long long seed;
};

// Reads "--size N --reps N --seed N" (any order, each optional); false on anything else.
bool parse_options(int argc, char** argv, Options& opt) {
  for (int a = 1; a < argc; a += 2) {
    if (a + 1 >= argc) return false;
    const char* text = argv[a + 1];
    char* end = nullptr;
    long long value = std::strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < 0) return false;
    if (std::strcmp(argv[a], "--size") == 0) {
      opt.size = value;
    } else if (std::strcmp(argv[a], "--reps") == 0) {
      opt.reps = value;
    } else if (std::strcmp(argv[a], "--seed") == 0) {
      opt.seed = value;
    } else {
      return false;
    }
  }
  return true;
}

// splitmix64, so a seed gives the same inputs on every machine.
struct Rng {
  uint64_t state;
  float next() {  // uniform in [0, 1), 24 random bits
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
  }
};

std::vector<float> random_vector(Rng& rng, size_t count) {
  std::vector<float> values(count);
  for (float& v : values) v = rng.next();
  return values;
}

float* device_buffer(size_t count) {
  float* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, count * sizeof(float)));
  return dev;
}

float* to_device(const std::vector<float>& host) {
  float* dev = device_buffer(host.size());
  CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return dev;
}

std::vector<float> to_host(const float* dev, size_t count) {
  std::vector<float> host(count);
  CUDA_CHECK(cudaMemcpy(host.data(), dev, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

// Largest |got - ref| / max(|ref|, floor): relative error, absolute where ref is near zero.
double max_rel_err(const std::vector<float>& got, const std::vector<double>& ref, double floor) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(got[i] - ref[i]) / std::fmax(std::fabs(ref[i]), floor);
    if (std::isnan(err)) return err;
    worst = std::fmax(worst, err);
  }
  return worst;
}

// Prints the three result lines; returns main's exit status.
int report(double ms, const std::vector<float>& out, double err, double tol) {
  double sum = 0.0;
  for (float v : out) sum += v;
  bool pass = err <= tol;  // false for NaN too
  std::printf("time_ms: %.6f\n", ms);
  std::printf("checksum: %.10g\n", sum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);
  return pass ? 0 : 1;
}

int usage(const char* prog) {
  std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", prog);
  return 2;
}

}  // namespace
