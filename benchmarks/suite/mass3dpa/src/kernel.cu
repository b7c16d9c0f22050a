#include "kernel.h"

// One thread per element: interpolate x to each quadrature point with the tensor-product
// basis, scale by the point's coefficient, and scatter back with the transposed basis.
// @optimize
__global__ void mass3dpa(const double* basis, const double* op, const double* x, double* y,
                         int num_elems) {
  int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= num_elems) return;
  double ye[DOFS];
  for (int d = 0; d < DOFS; ++d) ye[d] = 0.0;
  for (int qz = 0; qz < Q1D; ++qz)
    for (int qy = 0; qy < Q1D; ++qy)
      for (int qx = 0; qx < Q1D; ++qx) {
        double u = 0.0;
        for (int dz = 0; dz < D1D; ++dz)
          for (int dy = 0; dy < D1D; ++dy)
            for (int dx = 0; dx < D1D; ++dx)
              u += basis[qx * D1D + dx] * basis[qy * D1D + dy] * basis[qz * D1D + dz] *
                   x[e * DOFS + (dz * D1D + dy) * D1D + dx];
        u *= op[(long)e * QPTS + (qz * Q1D + qy) * Q1D + qx];
        for (int dz = 0; dz < D1D; ++dz)
          for (int dy = 0; dy < D1D; ++dy)
            for (int dx = 0; dx < D1D; ++dx)
              ye[(dz * D1D + dy) * D1D + dx] +=
                  basis[qx * D1D + dx] * basis[qy * D1D + dy] * basis[qz * D1D + dz] * u;
      }
  for (int d = 0; d < DOFS; ++d) y[e * DOFS + d] = ye[d];
}

void launch_mass3dpa(const double* basis, const double* op, const double* x, double* y,
                     int num_elems) {
  const int block = 128;
  mass3dpa<<<(num_elems + block - 1) / block, block>>>(basis, op, x, y, num_elems);
}
