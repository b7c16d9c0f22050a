// atax: y = A^T (A x) for an n x n float matrix A and vector x (inputs in [0, 1)).
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

std::vector<double> reference(int n, const std::vector<float>& A, const std::vector<float>& x) {
  std::vector<double> tmp(n, 0.0);
  std::vector<double> y(n, 0.0);
  for (int i = 0; i < n; ++i) {
    const float* row = &A[static_cast<size_t>(i) * n];
    for (int j = 0; j < n; ++j) tmp[i] += static_cast<double>(row[j]) * x[j];
  }
  for (int i = 0; i < n; ++i) {
    const float* row = &A[static_cast<size_t>(i) * n];
    for (int j = 0; j < n; ++j) y[j] += row[j] * tmp[i];
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{2048, 300, 12345};
  if (!parse_options(argc, argv, opt) || opt.size < 1 || opt.size > 32768 || opt.reps < 1)
    return usage(argv[0]);
  const int n = static_cast<int>(opt.size);

  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<float> A = random_vector(rng, static_cast<size_t>(n) * n);
  std::vector<float> x = random_vector(rng, n);
  float* dA = to_device(A);
  float* dx = to_device(x);
  float* dTmp = device_buffer(n);
  float* dy = device_buffer(n);

  double ms = time_reps(opt.reps, [&] { launch_atax(n, dA, dx, dTmp, dy); });
  std::vector<float> y = to_host(dy, n);
  for (float* p : {dA, dx, dTmp, dy}) CUDA_CHECK(cudaFree(p));

  // Float sums of n positive products, two levels deep, against a double reference: the error
  // is about sqrt(n) * 6e-8 per level (3e-6 at n = 2048); 1e-4 allows any summation order
  // (split sums, warp reductions) yet catches a wrong index or reduced precision.
  double err = max_rel_err(y, reference(n, A, x), 1e-30);
  return report(ms, y, err, 1e-4);
}
