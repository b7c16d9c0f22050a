// The fixed driver of every synthetic problem (nvcc-opt train problems --from synthetic).
//
// usage: synth [--size N] [--reps N] [--seed N]
//
// Fills a in [-1, 1) and b in [0.5, 1.5) from the seed (splitmix64), calls launch() of
// kernel.cu, and checks the result without knowing what it should be: no CUDA error, every
// output finite, not all zero, a second launch on the same arrays gives the same bits (so
// repeated timed launches are the same work and no launch accumulates), the inputs untouched,
// and the timed launches end with those same bits. Then it prints
//   time_ms: X      mean milliseconds per launch() over --reps launches (CUDA events)
//   checksum: X     the sum of the outputs
//   weighted: X     a sum with a weight per position (a shifted or permuted result moves it)
//   sample K: X     32 outputs at positions spread over the array
//   check: PASS     or "check: FAIL <why>" (exit status 1)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"

namespace {

constexpr int kSamples = 32;

[[noreturn]] void fail(const char* why, const char* detail) {
  std::printf("check: FAIL %s%s\n", why, detail);
  std::exit(1);
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    char detail[256];
    std::snprintf(detail, sizeof detail, " (%s: %s)", what, cudaGetErrorString(err));
    fail("CUDA error", detail);
  }
}

struct Options {
  long long size = 1LL << 24;  // 64 MiB per array: an element-wise kernel takes ~0.05 ms
  long long reps = 50;
  long long seed = 12345;
};

bool parse_value(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < lo || value > hi) return false;
  *out = value;
  return true;
}

bool parse_options(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    const char* value = argv[i + 1];
    bool ok = false;
    if (std::strcmp(argv[i], "--size") == 0) ok = parse_value(value, 1, 1LL << 26, &opt->size);
    else if (std::strcmp(argv[i], "--reps") == 0) ok = parse_value(value, 1, 100000, &opt->reps);
    else if (std::strcmp(argv[i], "--seed") == 0) ok = parse_value(value, 0, INT64_MAX, &opt->seed);
    if (!ok) return false;
  }
  return true;
}

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [lo, lo + width), 24 random bits (exact in a float).
std::vector<float> make_input(int n, uint64_t* state, float lo, float width) {
  std::vector<float> values(n);
  for (float& x : values) x = lo + width * static_cast<float>(splitmix64(state) >> 40) / 16777216.0f;
  return values;
}

std::vector<float> download(const float* device, int n) {
  std::vector<float> host(n);
  cuda_check(cudaMemcpy(host.data(), device, sizeof(float) * n, cudaMemcpyDeviceToHost),
             "copying an array back");
  return host;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return std::memcmp(x.data(), y.data(), sizeof(float) * x.size()) == 0;
}

void launch_checked(const float* a, const float* b, float* out, int n) {
  launch(a, b, out, n);
  cuda_check(cudaGetLastError(), "launching");
  cuda_check(cudaDeviceSynchronize(), "running the kernels");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const int n = static_cast<int>(opt.size);
  uint64_t state = static_cast<uint64_t>(opt.seed);
  const std::vector<float> a = make_input(n, &state, -1.0f, 2.0f);
  const std::vector<float> b = make_input(n, &state, 0.5f, 1.0f);

  float *d_a = nullptr, *d_b = nullptr, *d_out = nullptr;
  cuda_check(cudaMalloc(&d_a, sizeof(float) * n), "allocating a");
  cuda_check(cudaMalloc(&d_b, sizeof(float) * n), "allocating b");
  cuda_check(cudaMalloc(&d_out, sizeof(float) * n), "allocating out");
  cuda_check(cudaMemcpy(d_a, a.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "copying a");
  cuda_check(cudaMemcpy(d_b, b.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "copying b");
  cuda_check(cudaMemset(d_out, 0, sizeof(float) * n), "clearing out");

  launch_checked(d_a, d_b, d_out, n);
  const std::vector<float> first = download(d_out, n);
  bool nonzero = false;
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(first[i])) {
      char detail[64];
      std::snprintf(detail, sizeof detail, " (out[%d] = %g)", i, first[i]);
      fail("an output is not finite", detail);
    }
    nonzero = nonzero || first[i] != 0.0f;
  }
  if (!nonzero) fail("every output is zero", "");

  launch_checked(d_a, d_b, d_out, n);  // out now holds the first result: it must not matter
  if (!same_bits(download(d_out, n), first)) fail("a second launch gave other outputs", "");
  if (!same_bits(download(d_a, n), a) || !same_bits(download(d_b, n), b)) {
    fail("the launch changed its inputs", "");
  }

  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "creating an event");
  cuda_check(cudaEventCreate(&stop), "creating an event");
  cuda_check(cudaEventRecord(start), "recording an event");
  for (long long r = 0; r < opt.reps; ++r) launch(d_a, d_b, d_out, n);
  cuda_check(cudaGetLastError(), "launching");
  cuda_check(cudaEventRecord(stop), "recording an event");
  cuda_check(cudaEventSynchronize(stop), "running the timed launches");
  float total_ms = 0.0f;
  cuda_check(cudaEventElapsedTime(&total_ms, start, stop), "reading the events");
  if (!same_bits(download(d_out, n), first)) fail("the timed launches gave other outputs", "");

  double checksum = 0.0, weighted = 0.0;
  for (int i = 0; i < n; ++i) {
    checksum += first[i];
    weighted += first[i] * (1.0 + (i % 97) / 97.0);
  }
  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", checksum);
  std::printf("weighted: %.10g\n", weighted);
  for (int k = 0; k < kSamples; ++k) {
    long long i = (static_cast<long long>(k) * n) / kSamples + (k * 7919LL) % (n / kSamples + 1);
    std::printf("sample %d: %.9g\n", k, first[i < n ? i : n - 1]);
  }
  std::printf("check: PASS\n");

  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_out);
  return 0;
}
