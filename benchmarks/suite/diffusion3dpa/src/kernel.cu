#include "kernel.h"

// One thread per element. At each quadrature point the reference gradient of x is built
// from tensor products of the 1D tables, multiplied by the point's symmetric coefficient,
// and the result is applied back through the transposed gradient into the element's dofs.
// @optimize
__global__ void diffusion3dpa(const double* basis, const double* dbasis, const double* op,
                              const double* x, double* y, int num_elems) {
  int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= num_elems) return;
  double ye[DOFS];
  for (int d = 0; d < DOFS; ++d) ye[d] = 0.0;
  for (int qz = 0; qz < Q1D; ++qz)
    for (int qy = 0; qy < Q1D; ++qy)
      for (int qx = 0; qx < Q1D; ++qx) {
        double gx = 0.0, gy = 0.0, gz = 0.0;
        for (int dz = 0; dz < D1D; ++dz)
          for (int dy = 0; dy < D1D; ++dy)
            for (int dx = 0; dx < D1D; ++dx) {
              double u = x[e * DOFS + (dz * D1D + dy) * D1D + dx];
              double bx = basis[qx * D1D + dx], by = basis[qy * D1D + dy];
              double bz = basis[qz * D1D + dz];
              gx += dbasis[qx * D1D + dx] * by * bz * u;
              gy += bx * dbasis[qy * D1D + dy] * bz * u;
              gz += bx * by * dbasis[qz * D1D + dz] * u;
            }
        const double* c = op + ((long)e * QPTS + (qz * Q1D + qy) * Q1D + qx) * SYM;
        double fx = c[0] * gx + c[1] * gy + c[2] * gz;
        double fy = c[1] * gx + c[3] * gy + c[4] * gz;
        double fz = c[2] * gx + c[4] * gy + c[5] * gz;
        for (int dz = 0; dz < D1D; ++dz)
          for (int dy = 0; dy < D1D; ++dy)
            for (int dx = 0; dx < D1D; ++dx) {
              double bx = basis[qx * D1D + dx], by = basis[qy * D1D + dy];
              double bz = basis[qz * D1D + dz];
              ye[(dz * D1D + dy) * D1D + dx] += dbasis[qx * D1D + dx] * by * bz * fx +
                                                bx * dbasis[qy * D1D + dy] * bz * fy +
                                                bx * by * dbasis[qz * D1D + dz] * fz;
            }
      }
  for (int d = 0; d < DOFS; ++d) y[e * DOFS + d] = ye[d];
}

void launch_diffusion3dpa(const double* basis, const double* dbasis, const double* op,
                          const double* x, double* y, int num_elems) {
  const int block = 128;
  diffusion3dpa<<<(num_elems + block - 1) / block, block>>>(basis, dbasis, op, x, y, num_elems);
}
