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
#include "driver_apps.cuh"

namespace {

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
