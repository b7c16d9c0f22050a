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

std::vector<double> reference(const std::vector<double>& zone_vals, long n) {
  long np = n + 1;
  std::vector<double> node(np * np * np, 0.0);
  for (long k = 0; k < n; ++k)
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < n; ++i) {
        double share = 0.125 * zone_vals[i + n * (j + n * k)];
        for (int c = 0; c < 8; ++c)
          node[(i + (c & 1)) + np * ((j + (c >> 1 & 1)) + np * (k + (c >> 2)))] += share;
      }
  return node;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{128, 500, 12345};  // size = zones per direction
  if (!parse_options(argc, argv, 1024, &opt)) {
    std::fprintf(stderr, "usage: %s [--size ZONES_PER_DIM] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  long n = opt.size, np = n + 1;
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<double> zone_vals(n * n * n);
  for (double& v : zone_vals) v = rng.next();

  double* d_zone = to_device(zone_vals);
  double* d_node = nullptr;
  size_t nodes = static_cast<size_t>(np * np * np);
  CUDA_CHECK(cudaMalloc(&d_node, nodes * sizeof(double)));
  int ni = static_cast<int>(n);
  double ms = time_reps(opt.reps, [&] { CUDA_CHECK(launch_nodal_accumulation(d_zone, d_node, ni)); });
  std::vector<double> node = from_device(d_node, nodes);
  CUDA_CHECK(cudaFree(d_zone));
  CUDA_CHECK(cudaFree(d_node));

  // Each node sums at most 8 positive doubles; atomics add them in any order, which moves
  // the result by a few ulps (~1e-16 relative), so 1e-12 is a tight but safe bound.
  return report(ms, node, reference(zone_vals, n), 1e-12);
}
