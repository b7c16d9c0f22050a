#include "kernel.h"

// @optimize begin heat_3d
// One explicit diffusion sweep (coefficient 0.125 per axis), one thread per cell; boundary
// cells keep their value.
__global__ void heat_sweep(int n, const float* src, float* dst) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int i = blockIdx.z * blockDim.z + threadIdx.z;
  if (i >= n || j >= n || k >= n) return;
  int c = (i * n + j) * n + k;
  if (i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1) {
    dst[c] = src[c];
  } else {
    dst[c] = src[c] + 0.125f * (src[c + n * n] - 2.0f * src[c] + src[c - n * n]) +
             0.125f * (src[c + n] - 2.0f * src[c] + src[c - n]) +
             0.125f * (src[c + 1] - 2.0f * src[c] + src[c - 1]);
  }
}

void launch_heat_3d(int n, int steps, const float* in, float* tmp, float* out) {
  dim3 block(8, 8, 8);
  dim3 grid((n + 7) / 8, (n + 7) / 8, (n + 7) / 8);
  for (int t = 0; t < steps; ++t) {
    heat_sweep<<<grid, block>>>(n, t == 0 ? in : out, tmp);
    heat_sweep<<<grid, block>>>(n, tmp, out);
  }
}
// @optimize end
