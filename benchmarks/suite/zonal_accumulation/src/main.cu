#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_mesh.cuh"

namespace {

std::vector<double> reference(const std::vector<double>& node, long n) {
  long np = n + 1;
  std::vector<double> zone(n * n * n);
  for (long k = 0; k < n; ++k)
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < n; ++i) {
        double sum = 0.0;
        for (int c = 0; c < 8; ++c)
          sum += node[(i + (c & 1)) + np * ((j + (c >> 1 & 1)) + np * (k + (c >> 2)))];
        zone[i + n * (j + n * k)] = 0.125 * sum;
      }
  return zone;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{256, 500, 12345};  // size = zones per direction
  if (!parse_options(argc, argv, 1024, &opt)) {
    std::fprintf(stderr, "usage: %s [--size ZONES_PER_DIM] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  long n = opt.size, np = n + 1;
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<double> node(np * np * np);
  for (double& v : node) v = rng.next();

  double* d_node = to_device(node);
  double* d_zone = nullptr;
  size_t zones = static_cast<size_t>(n * n * n);
  CUDA_CHECK(cudaMalloc(&d_zone, zones * sizeof(double)));
  int ni = static_cast<int>(n);
  double ms = time_reps(opt.reps, [&] { launch_zonal_accumulation(d_node, d_zone, ni); });
  std::vector<double> zone = from_device(d_zone, zones);
  CUDA_CHECK(cudaFree(d_node));
  CUDA_CHECK(cudaFree(d_zone));

  // Each zone averages 8 positive doubles; any summation order lands within a few ulps
  // (~1e-16 relative) of the reference, so 1e-12 is a tight but safe bound.
  return report(ms, zone, reference(node, n), 1e-12);
}
