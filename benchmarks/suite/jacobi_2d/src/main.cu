// jacobi_2d: kSteps Jacobi time steps (two 5-point sweeps each, ping-ponging between two
// buffers) on an n x n float grid with fixed boundary values (inputs in [0, 1)). The input grid
// is never written, so every repetition computes the same result.
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

constexpr int kSteps = 50;

void sweep(int n, const std::vector<double>& src, std::vector<double>& dst) {
  dst = src;  // boundary cells keep their value
  for (int i = 1; i < n - 1; ++i)
    for (int j = 1; j < n - 1; ++j) {
      size_t c = static_cast<size_t>(i) * n + j;
      dst[c] = 0.2 * (src[c] + src[c - n] + src[c + n] + src[c - 1] + src[c + 1]);
    }
}

std::vector<double> reference(int n, const std::vector<float>& in) {
  std::vector<double> a(in.begin(), in.end());
  std::vector<double> b(a.size());
  for (int t = 0; t < 2 * kSteps; ++t) {
    sweep(n, a, b);
    a.swap(b);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{1024, 100, 12345};
  if (!parse_options(argc, argv, opt) || opt.size < 3 || opt.size > 32768 || opt.reps < 1)
    return usage(argv[0]);
  const int n = static_cast<int>(opt.size);
  const size_t count = static_cast<size_t>(n) * n;

  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<float> in = random_vector(rng, count);
  float* dIn = to_device(in);
  float* dTmp = device_buffer(count);
  float* dOut = device_buffer(count);

  double ms = time_reps(opt.reps, [&] { launch_jacobi_2d(n, kSteps, dIn, dTmp, dOut); });
  std::vector<float> out = to_host(dOut, count);
  for (float* p : {dIn, dTmp, dOut}) CUDA_CHECK(cudaFree(p));

  // Every sweep is a mean of positive values, so float rounding adds at most a few 6e-8
  // relative per sweep: below 2e-5 after 100 sweeps against the double reference. 1e-4 allows
  // reassociated sums and fused sweeps yet catches a wrong neighbour or a missed sweep.
  double err = max_rel_err(out, reference(n, in), 1e-30);
  return report(ms, out, err, 1e-4);
}
