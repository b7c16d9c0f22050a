// gemver: A_hat = A + u1 v1^T + u2 v2^T; x = beta * A_hat^T y + z; w = alpha * A_hat x, for an
// n x n float matrix (inputs in [0, 1)). x and w are the outputs; A_hat is scratch, so a rewrite
// may fuse it away. Each step overwrites its output, so every repetition computes the same result.
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

struct Inputs {
  std::vector<float> A, u1, v1, u2, v2, y, z;
};

// x followed by w, in double.
std::vector<double> reference(int n, double alpha, double beta, const Inputs& in) {
  std::vector<double> A_hat(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      size_t ij = static_cast<size_t>(i) * n + j;
      A_hat[ij] = in.A[ij] + static_cast<double>(in.u1[i]) * in.v1[j] +
                  static_cast<double>(in.u2[i]) * in.v2[j];
    }
  std::vector<double> xw(2 * static_cast<size_t>(n), 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) xw[i] += A_hat[static_cast<size_t>(j) * n + i] * in.y[j];
  for (int i = 0; i < n; ++i) xw[i] = beta * xw[i] + in.z[i];
  for (int i = 0; i < n; ++i) {
    double sum = 0.0;
    for (int j = 0; j < n; ++j) sum += A_hat[static_cast<size_t>(i) * n + j] * xw[j];
    xw[n + i] = alpha * sum;
  }
  return xw;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{2048, 300, 12345};
  if (!parse_options(argc, argv, opt) || opt.size < 1 || opt.size > 32768 || opt.reps < 1)
    return usage(argv[0]);
  const int n = static_cast<int>(opt.size);
  const float alpha = 1.5f;
  const float beta = 1.2f;

  Rng rng{static_cast<uint64_t>(opt.seed)};
  Inputs in;
  in.A = random_vector(rng, static_cast<size_t>(n) * n);
  for (std::vector<float>* v : {&in.u1, &in.v1, &in.u2, &in.v2, &in.y, &in.z})
    *v = random_vector(rng, n);
  float* dA = to_device(in.A);
  float* du1 = to_device(in.u1);
  float* dv1 = to_device(in.v1);
  float* du2 = to_device(in.u2);
  float* dv2 = to_device(in.v2);
  float* dy = to_device(in.y);
  float* dz = to_device(in.z);
  float* dA_hat = device_buffer(static_cast<size_t>(n) * n);
  float* dx = device_buffer(n);
  float* dw = device_buffer(n);

  double ms = time_reps(opt.reps, [&] {
    launch_gemver(n, alpha, beta, dA, du1, dv1, du2, dv2, dy, dz, dA_hat, dx, dw);
  });
  std::vector<float> xw = to_host(dx, n);
  std::vector<float> w = to_host(dw, n);
  xw.insert(xw.end(), w.begin(), w.end());
  for (float* p : {dA, du1, dv1, du2, dv2, dy, dz, dA_hat, dx, dw}) CUDA_CHECK(cudaFree(p));

  // Float sums of n positive products, two levels deep, against a double reference: the error
  // is about sqrt(n) * 6e-8 per level (3e-6 at n = 2048); 1e-4 allows any summation order
  // (split sums, fusing A_hat away) yet catches a wrong index or reduced precision.
  double err = max_rel_err(xw, reference(n, alpha, beta, in), 1e-30);
  return report(ms, xw, err, 1e-4);
}
