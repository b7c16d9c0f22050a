#include "kernel.h"

// @optimize begin mvt
// x1[i] += sum_j A[i][j] * y1[j]: one thread per row of A.
__global__ void mvt_x1(const float* a, const float* y1, float* x1, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += a[i * n + j] * y1[j];
    x1[i] += sum;
  }
}

// x2[i] += sum_j A[j][i] * y2[j]: one thread per column of A.
__global__ void mvt_x2(const float* a, const float* y2, float* x2, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += a[j * n + i] * y2[j];
    x2[i] += sum;
  }
}

void launch_mvt(const float* a, const float* y1, const float* y2, float* x1, float* x2, int n) {
  const int block = 256;
  int grid = (n + block - 1) / block;
  mvt_x1<<<grid, block>>>(a, y1, x1, n);
  mvt_x2<<<grid, block>>>(a, y2, x2, n);
}
// @optimize end
