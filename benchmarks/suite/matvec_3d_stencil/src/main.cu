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

std::vector<double> reference(const std::vector<double>& coef, const std::vector<double>& x,
                              long n) {
  long m = n + 2, cells = n * n * n;
  std::vector<double> y(cells, 0.0);
  for (int s = 0; s < 27; ++s) {
    long off = (s % 3 - 1) + m * ((s / 3 % 3 - 1) + m * (s / 9 - 1));
    for (long k = 0; k < n; ++k)
      for (long j = 0; j < n; ++j)
        for (long i = 0; i < n; ++i) {
          long c = i + n * (j + n * k);
          y[c] += coef[s * cells + c] * x[(i + 1) + m * ((j + 1) + m * (k + 1)) + off];
        }
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{128, 300, 12345};  // size = interior cells per direction
  if (!parse_options(argc, argv, 256, &opt)) {
    std::fprintf(stderr, "usage: %s [--size CELLS_PER_DIM] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  long n = opt.size, m = n + 2, cells = n * n * n;
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<double> coef(27 * cells), x(m * m * m);
  for (double& v : coef) v = rng.next();
  for (double& v : x) v = rng.next();

  double *d_coef = to_device(coef), *d_x = to_device(x);
  double* d_y = nullptr;
  CUDA_CHECK(cudaMalloc(&d_y, cells * sizeof(double)));
  int ni = static_cast<int>(n);
  double ms = time_reps(opt.reps, [&] { launch_matvec_3d_stencil(d_coef, d_x, d_y, ni); });
  std::vector<double> y = from_device(d_y, static_cast<size_t>(cells));
  for (double* p : {d_coef, d_x, d_y}) CUDA_CHECK(cudaFree(p));

  // 27-term double sums of positive products; any order stays within ~1e-15 relative.
  return report(ms, y, reference(coef, x, n), 1e-12);
}
