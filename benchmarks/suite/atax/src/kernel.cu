#include "kernel.h"

// @optimize begin atax
// tmp = A x, one thread per row.
__global__ void row_products(int n, const float* A, const float* x, float* tmp) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += A[i * n + j] * x[j];
    tmp[i] = sum;
  }
}

// y = A^T tmp, one thread per column.
__global__ void column_products(int n, const float* A, const float* tmp, float* y) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += A[i * n + j] * tmp[i];
    y[j] = sum;
  }
}

void launch_atax(int n, const float* A, const float* x, float* tmp, float* y) {
  int block = 256;
  int grid = (n + block - 1) / block;
  row_products<<<grid, block>>>(n, A, x, tmp);
  column_products<<<grid, block>>>(n, A, tmp, y);
}
// @optimize end
