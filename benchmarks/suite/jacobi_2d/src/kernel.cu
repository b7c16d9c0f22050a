#include "kernel.h"

// @optimize begin jacobi_2d
// One sweep, one thread per cell: interior cells take the mean of themselves and their four
// neighbours; boundary cells keep their value.
__global__ void jacobi_sweep(int n, const float* src, float* dst) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n) return;
  if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
    dst[i * n + j] = src[i * n + j];
  } else {
    dst[i * n + j] = 0.2f * (src[i * n + j] + src[(i - 1) * n + j] + src[(i + 1) * n + j] +
                             src[i * n + j - 1] + src[i * n + j + 1]);
  }
}

void launch_jacobi_2d(int n, int steps, const float* in, float* tmp, float* out) {
  dim3 block(16, 16);
  dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  for (int t = 0; t < steps; ++t) {
    jacobi_sweep<<<grid, block>>>(n, t == 0 ? in : out, tmp);
    jacobi_sweep<<<grid, block>>>(n, tmp, out);
  }
}
// @optimize end
