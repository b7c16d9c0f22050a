#include "kernel.h"

// One thread per interior cell: sum its 27 neighbours weighted by the cell's coefficients.
// @optimize
__global__ void matvec_3d_stencil(const double* coef, const double* x, double* y, int n) {
  long c = (long)blockIdx.x * blockDim.x + threadIdx.x;
  long cells = (long)n * n * n;
  if (c >= cells) return;
  int i = c % n;
  int j = (c / n) % n;
  int k = c / ((long)n * n);
  long m = n + 2;
  double sum = 0.0;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        int s = (dx + 1) + 3 * (dy + 1) + 9 * (dz + 1);
        long g = (i + 1 + dx) + m * ((j + 1 + dy) + m * (k + 1 + dz));
        sum += coef[s * cells + c] * x[g];
      }
  y[c] = sum;
}

void launch_matvec_3d_stencil(const double* coef, const double* x, double* y, int n) {
  long cells = (long)n * n * n;
  const int block = 256;
  matvec_3d_stencil<<<(cells + block - 1) / block, block>>>(coef, x, y, n);
}
