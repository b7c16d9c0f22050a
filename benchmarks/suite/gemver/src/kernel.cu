#include "kernel.h"

// @optimize begin gemver
// A_hat = A + u1 v1^T + u2 v2^T, one thread per element.
__global__ void rank2_update(int n, const float* A, const float* u1, const float* v1,
                             const float* u2, const float* v2, float* A_hat) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && j < n) A_hat[i * n + j] = A[i * n + j] + u1[i] * v1[j] + u2[i] * v2[j];
}

// x = beta * A_hat^T y, one thread per column.
__global__ void transposed_product(int n, float beta, const float* A_hat, const float* y,
                                   float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += A_hat[j * n + i] * y[j];
    x[i] = beta * sum;
  }
}

// x += z.
__global__ void add_vector(int n, const float* z, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += z[i];
}

// w = alpha * A_hat x, one thread per row.
__global__ void product(int n, float alpha, const float* A_hat, const float* x, float* w) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += A_hat[i * n + j] * x[j];
    w[i] = alpha * sum;
  }
}

void launch_gemver(int n, float alpha, float beta, const float* A, const float* u1,
                   const float* v1, const float* u2, const float* v2, const float* y,
                   const float* z, float* A_hat, float* x, float* w) {
  dim3 block2d(16, 16);
  dim3 grid2d((n + block2d.x - 1) / block2d.x, (n + block2d.y - 1) / block2d.y);
  int block = 256;
  int grid = (n + block - 1) / block;
  rank2_update<<<grid2d, block2d>>>(n, A, u1, v1, u2, v2, A_hat);
  transposed_product<<<grid, block>>>(n, beta, A_hat, y, x);
  add_vector<<<grid, block>>>(n, z, x);
  product<<<grid, block>>>(n, alpha, A_hat, x, w);
}
// @optimize end
