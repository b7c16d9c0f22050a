// three_mm: E = A * B, F = C * D, G = E * F for n x n float matrices (inputs in [0, 1)).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,               \
                   cudaGetErrorString(err_));                                             \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

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

// Mean milliseconds per call of run() over `reps` calls, after one untimed warm-up call.
template <class Run>
double time_reps(long long reps, Run run) {
  run();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start;
  cudaEvent_t stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; ++r) run();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / static_cast<double>(reps);
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

// Row-major n x n product a * b in double (i-k-j order for cache-friendly rows).
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int n) {
  std::vector<double> c(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      double aik = a[static_cast<size_t>(i) * n + k];
      const double* brow = &b[static_cast<size_t>(k) * n];
      double* crow = &c[static_cast<size_t>(i) * n];
      for (int j = 0; j < n; ++j) crow[j] += aik * brow[j];
    }
  return c;
}

std::vector<double> widen(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{512, 300, 12345};
  if (!parse_options(argc, argv, opt) || opt.size < 1 || opt.size > 8192 || opt.reps < 1)
    return usage(argv[0]);
  const int n = static_cast<int>(opt.size);
  const size_t count = static_cast<size_t>(n) * n;

  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<float> A = random_vector(rng, count);
  std::vector<float> B = random_vector(rng, count);
  std::vector<float> C = random_vector(rng, count);
  std::vector<float> D = random_vector(rng, count);
  float* dA = to_device(A);
  float* dB = to_device(B);
  float* dC = to_device(C);
  float* dD = to_device(D);
  float* dE = device_buffer(count);
  float* dF = device_buffer(count);
  float* dG = device_buffer(count);

  double ms = time_reps(opt.reps, [&] { launch_three_mm(n, dA, dB, dC, dD, dE, dF, dG); });
  std::vector<float> G = to_host(dG, count);
  for (float* p : {dA, dB, dC, dD, dE, dF, dG}) CUDA_CHECK(cudaFree(p));

  // Float sums of n positive products, two levels deep, against a double reference: the error
  // is about sqrt(n) * 6e-8 per level (1e-6 at n = 512, bounded by 2 * n * 6e-8 = 6e-5); 1e-4
  // allows any summation order yet catches a wrong index or reduced precision (tf32/half).
  std::vector<double> ref = matmul(matmul(widen(A), widen(B), n), matmul(widen(C), widen(D), n), n);
  double err = max_rel_err(G, ref, 1e-30);
  return report(ms, G, err, 1e-4);
}
