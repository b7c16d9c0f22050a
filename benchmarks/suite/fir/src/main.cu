// fir: a 16-tap finite impulse response filter over a long float signal. See src/kernel.cu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,              \
                   cudaGetErrorString(err_));                                            \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

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

// One warm-up launch, then `reps` timed ones; returns the mean ms per repetition.
template <class Launch>
float time_reps(long reps, Launch launch) {
  launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long r = 0; r < reps; ++r) launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / static_cast<float>(reps);
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

std::vector<float> uniform_floats(Rng& rng, long count) {
  std::vector<float> v(count);
  for (float& f : v) f = static_cast<float>(rng.uniform());
  return v;
}

// Accumulated in double, so the check measures the GPU's float rounding alone.
std::vector<double> reference(const std::vector<float>& in, const std::vector<float>& coeff,
                              long n) {
  std::vector<double> out(n);
  for (long i = 0; i < n; ++i) {
    double sum = 0.0;
    for (int t = 0; t < kTaps; ++t) sum += static_cast<double>(coeff[t]) * in[i + t];
    out[i] = sum;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{1L << 25, 1000, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long n = opt.size;
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<float> coeff = uniform_floats(rng, kTaps);
  std::vector<float> in = uniform_floats(rng, n + kTaps - 1);
  float* d_in = to_device(in);
  float* d_coeff = to_device(coeff);
  float* d_out = device_buffer<float>(n);

  float ms = time_reps(opt.reps, [&] { launch_fir(d_in, d_coeff, d_out, n); });
  std::vector<float> got(n);
  copy_back(got, 0, d_out, n);
  for (float* ptr : {d_in, d_coeff, d_out}) CUDA_CHECK(cudaFree(ptr));

  // Inputs and taps are in [0, 1), so outputs are sums of 16 non-negative terms (no
  // cancellation): float accumulation stays within ~16 ulps (~1e-6) of the double reference.
  // 1e-5 allows any summation order; the floor only guards an all-zero window.
  return report(ms, got, reference(in, coeff, n), 1e-6, 1e-5);
}
