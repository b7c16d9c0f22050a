// pressure: per-element hydro pressure p = cls * (1 + compression) * e with cutoffs
// (small |p| -> 0, expanded elements -> 0, floor pmin). See src/kernel.cu.
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

struct Inputs {
  std::vector<double> compression, e_old, vnewc;
};

// Ranges chosen so every cutoff fires for some elements: energies straddle zero (negative and
// tiny pressures), relative volumes straddle eosvmax.
Inputs make_inputs(long n, uint64_t seed) {
  Rng rng{seed};
  Inputs in{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (long i = 0; i < n; ++i) {
    in.compression[i] = rng.uniform() - 0.5;
    in.e_old[i] = 2.0 * rng.uniform() - 0.2;
    in.vnewc[i] = 0.5 + rng.uniform();
  }
  return in;
}

std::vector<double> reference(const Inputs& in, PressureParams prm) {
  std::vector<double> p(in.e_old.size());
  for (size_t i = 0; i < p.size(); ++i) {
    double bvc = prm.cls * (in.compression[i] + 1.0);
    double v = bvc * in.e_old[i];
    if (std::fabs(v) < prm.p_cut) v = 0.0;
    if (in.vnewc[i] >= prm.eosvmax) v = 0.0;
    if (v < prm.pmin) v = prm.pmin;
    p[i] = v;
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{1L << 23, 1000, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long n = opt.size;
  const PressureParams prm{2.0 / 3.0, 1e-3, 0.0, 1.4};
  Inputs in = make_inputs(n, static_cast<uint64_t>(opt.seed));
  double* d_comp = to_device(in.compression);
  double* d_e = to_device(in.e_old);
  double* d_v = to_device(in.vnewc);
  double* d_p = device_buffer<double>(n);

  float ms = time_reps(opt.reps, [&] { launch_pressure(d_comp, d_e, d_v, d_p, n, prm); });
  std::vector<double> got(n);
  copy_back(got, 0, d_p, n);
  for (double* ptr : {d_comp, d_e, d_v, d_p}) CUDA_CHECK(cudaFree(ptr));

  // Pressures are O(1); a floor of 1 judges the clamped zeros absolutely. The math is two
  // multiplies per element, so anything beyond a few ulps (1e-12) is a real difference.
  return report(ms, got, reference(in, prm), 1.0, 1e-12);
}
