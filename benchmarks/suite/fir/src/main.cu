// fir: a 16-tap finite impulse response filter over a long float signal. See src/kernel.cu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_apps.cuh"

namespace {

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
