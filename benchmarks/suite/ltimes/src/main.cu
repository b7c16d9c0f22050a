// ltimes: moment contraction of a discrete-ordinates transport sweep,
// phi(m, g, z) = sum_d ell(m, d) * psi(d, g, z). See src/kernel.cu.
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

std::vector<double> uniform_doubles(Rng& rng, long count) {
  std::vector<double> v(count);
  for (double& x : v) x = rng.uniform();
  return v;
}

std::vector<double> reference(const std::vector<double>& ell, const std::vector<double>& psi,
                              long num_zones) {
  std::vector<double> phi(num_zones * kGroups * kMoments);
  for (long zg = 0; zg < num_zones * kGroups; ++zg)
    for (int m = 0; m < kMoments; ++m) {
      double sum = 0.0;
      for (int d = 0; d < kDirs; ++d) sum += ell[m * kDirs + d] * psi[zg * kDirs + d];
      phi[zg * kMoments + m] = sum;
    }
  return phi;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{2048, 500, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long num_zones = opt.size;
  const long num_phi = num_zones * kGroups * kMoments;
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<double> ell = uniform_doubles(rng, kMoments * kDirs);
  std::vector<double> psi = uniform_doubles(rng, num_zones * kGroups * kDirs);
  double* d_ell = to_device(ell);
  double* d_psi = to_device(psi);
  double* d_phi = device_buffer<double>(num_phi);

  float ms = time_reps(opt.reps, [&] { launch_ltimes(d_ell, d_psi, d_phi, num_zones); });
  std::vector<double> got(num_phi);
  copy_back(got, 0, d_phi, num_phi);
  for (double* ptr : {d_ell, d_psi, d_phi}) CUDA_CHECK(cudaFree(ptr));

  // All terms are non-negative (no cancellation), so any summation order stays within ~64 ulps
  // (~1e-14) of the reference; 1e-10 is generous. Outputs are ~16, the floor is a guard only.
  return report(ms, got, reference(ell, psi, num_zones), 1e-6, 1e-10);
}
