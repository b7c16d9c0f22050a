#include "kernel.h"

// @optimize begin three_mm
// out = left * right, one thread per element of out.
__global__ void matmul(int n, const float* left, const float* right, float* out) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && j < n) {
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) sum += left[i * n + k] * right[k * n + j];
    out[i * n + j] = sum;
  }
}

void launch_three_mm(int n, const float* A, const float* B, const float* C, const float* D,
                     float* E, float* F, float* G) {
  dim3 block(16, 16);
  dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  matmul<<<grid, block>>>(n, A, B, E);
  matmul<<<grid, block>>>(n, C, D, F);
  matmul<<<grid, block>>>(n, E, F, G);
}
// @optimize end
