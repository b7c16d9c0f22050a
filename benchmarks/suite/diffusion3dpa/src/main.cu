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

// The 3D reference gradients of all dofs at all quadrature points: [QPTS][DOFS][3].
std::vector<double> gradient_table(const std::vector<double>& b, const std::vector<double>& g) {
  std::vector<double> t(QPTS * DOFS * 3);
  for (int q = 0; q < QPTS; ++q) {
    int qx = q % Q1D, qy = (q / Q1D) % Q1D, qz = q / (Q1D * Q1D);
    for (int d = 0; d < DOFS; ++d) {
      int dx = d % D1D, dy = (d / D1D) % D1D, dz = d / (D1D * D1D);
      double bx = b[qx * D1D + dx], by = b[qy * D1D + dy], bz = b[qz * D1D + dz];
      double* out = &t[(q * DOFS + d) * 3];
      out[0] = g[qx * D1D + dx] * by * bz;
      out[1] = bx * g[qy * D1D + dy] * bz;
      out[2] = bx * by * g[qz * D1D + dz];
    }
  }
  return t;
}

std::vector<double> reference(const std::vector<double>& b, const std::vector<double>& g,
                              const std::vector<double>& op, const std::vector<double>& x,
                              long elems) {
  std::vector<double> t = gradient_table(b, g), y(x.size(), 0.0);
  for (long e = 0; e < elems; ++e) {
    for (int q = 0; q < QPTS; ++q) {
      double grad[3] = {0.0, 0.0, 0.0};
      for (int d = 0; d < DOFS; ++d)
        for (int k = 0; k < 3; ++k) grad[k] += t[(q * DOFS + d) * 3 + k] * x[e * DOFS + d];
      const double* c = &op[(e * QPTS + q) * SYM];
      double f[3] = {c[0] * grad[0] + c[1] * grad[1] + c[2] * grad[2],
                     c[1] * grad[0] + c[3] * grad[1] + c[4] * grad[2],
                     c[2] * grad[0] + c[4] * grad[1] + c[5] * grad[2]};
      for (int d = 0; d < DOFS; ++d)
        for (int k = 0; k < 3; ++k) y[e * DOFS + d] += t[(q * DOFS + d) * 3 + k] * f[k];
    }
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{32768, 200, 12345};  // size = number of elements
  if (!parse_options(argc, argv, 1L << 20, &opt)) {
    std::fprintf(stderr, "usage: %s [--size ELEMS] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  // Synthetic positive 1D tables keep every output a sum of positive terms: with a true
  // Lagrange basis each element's outputs sum to zero (constants lie in the operator's
  // null space), leaving the checksum as pure rounding noise. The data flow is unchanged.
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<double> b(Q1D * D1D), g(Q1D * D1D);
  for (double& v : b) v = rng.next();
  for (double& v : g) v = rng.next();
  std::vector<double> op(opt.size * QPTS * SYM), x(opt.size * DOFS);
  for (double& v : op) v = rng.next();
  for (double& v : x) v = rng.next();

  double *d_b = to_device(b), *d_g = to_device(g), *d_op = to_device(op), *d_x = to_device(x);
  double* d_y = nullptr;
  CUDA_CHECK(cudaMalloc(&d_y, x.size() * sizeof(double)));
  int elems = static_cast<int>(opt.size);
  double ms = time_reps(opt.reps, [&] { launch_diffusion3dpa(d_b, d_g, d_op, d_x, d_y, elems); });
  std::vector<double> y = from_device(d_y, x.size());
  for (double* p : {d_b, d_g, d_op, d_x, d_y}) CUDA_CHECK(cudaFree(p));

  // Double-precision sums of ~2k positive terms; a reordered (e.g. sum-factorised) version
  // differs from this reference by ~1e-14 relative, so 1e-10 leaves ample room.
  return report(ms, y, reference(b, g, op, x, opt.size), 1e-10);
}
