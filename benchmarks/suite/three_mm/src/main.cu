// three_mm: E = A * B, F = C * D, G = E * F for n x n float matrices (inputs in [0, 1)).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_polybench.cuh"

namespace {

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
