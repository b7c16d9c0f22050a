// gesummv: y = alpha * A x + beta * B x for n x n float matrices (inputs in [0, 1)).
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

std::vector<double> reference(int n, double alpha, double beta, const std::vector<float>& A,
                              const std::vector<float>& B, const std::vector<float>& x) {
  std::vector<double> y(n);
  for (int i = 0; i < n; ++i) {
    double sum_a = 0.0;
    double sum_b = 0.0;
    for (int j = 0; j < n; ++j) {
      sum_a += static_cast<double>(A[static_cast<size_t>(i) * n + j]) * x[j];
      sum_b += static_cast<double>(B[static_cast<size_t>(i) * n + j]) * x[j];
    }
    y[i] = alpha * sum_a + beta * sum_b;
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{2048, 300, 12345};
  if (!parse_options(argc, argv, opt) || opt.size < 1 || opt.size > 32768 || opt.reps < 1)
    return usage(argv[0]);
  const int n = static_cast<int>(opt.size);
  const size_t count = static_cast<size_t>(n) * n;
  const float alpha = 1.5f;
  const float beta = 1.2f;

  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<float> A = random_vector(rng, count);
  std::vector<float> B = random_vector(rng, count);
  std::vector<float> x = random_vector(rng, n);
  float* dA = to_device(A);
  float* dB = to_device(B);
  float* dx = to_device(x);
  float* dy = device_buffer(n);

  double ms = time_reps(opt.reps, [&] { launch_gesummv(n, alpha, beta, dA, dB, dx, dy); });
  std::vector<float> y = to_host(dy, n);
  for (float* p : {dA, dB, dx, dy}) CUDA_CHECK(cudaFree(p));

  // Float sums of n positive products against a double reference: the error is about
  // sqrt(n) * 6e-8 (3e-6 at n = 2048); 1e-4 allows any summation order (split sums, warp
  // reductions) yet catches a wrong index or reduced precision.
  double err = max_rel_err(y, reference(n, alpha, beta, A, B, x), 1e-30);
  return report(ms, y, err, 1e-4);
}
