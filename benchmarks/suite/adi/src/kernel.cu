#include "kernel.h"

// @optimize begin adi
// Solves one line of (1 + 2a) x_j - a (x_{j-1} + x_{j+1}) = rhs_j by the Thomas algorithm, rhs
// being the explicit half step across the line. Element j of the line is at
// line * across + j * along; cp holds the eliminated upper diagonal.
__device__ void solve_line(const float* u, float* x, float* cp, int n, int line, int along,
                           int across, float alpha) {
  const float diag = 1.0f + 2.0f * alpha;
  int first = line * across;
  for (int j = 0; j < n; ++j) {
    int p = first + j * along;
    float rhs = (1.0f - 2.0f * alpha) * u[p];
    if (line > 0) rhs += alpha * u[p - across];
    if (line < n - 1) rhs += alpha * u[p + across];
    float m = diag + (j > 0 ? alpha * cp[p - along] : 0.0f);
    cp[p] = -alpha / m;
    x[p] = (rhs + (j > 0 ? alpha * x[p - along] : 0.0f)) / m;
  }
  for (int j = n - 2; j >= 0; --j) {
    int p = first + j * along;
    x[p] -= cp[p] * x[p + along];
  }
}

// Implicit in x: one thread solves one row.
__global__ void adi_row_sweep(const float* u, float* v, float* cp, int n, float alpha) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n) solve_line(u, v, cp, n, row, 1, n, alpha);
}

// Implicit in y: one thread solves one column.
__global__ void adi_column_sweep(const float* v, float* u, float* cp, int n, float alpha) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col < n) solve_line(v, u, cp, n, col, n, 1, alpha);
}

void launch_adi(const float* in, float* tmp, float* out, float* scratch, int n, int steps,
                float alpha) {
  const int block = 128;
  int grid = (n + block - 1) / block;
  const float* src = in;
  for (int s = 0; s < steps; ++s) {
    adi_row_sweep<<<grid, block>>>(src, tmp, scratch, n, alpha);
    adi_column_sweep<<<grid, block>>>(tmp, out, scratch, n, alpha);
    src = out;
  }
}
// @optimize end
