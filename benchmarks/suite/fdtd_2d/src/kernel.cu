#include "kernel.h"

// @optimize begin fdtd_2d
// ey from the hz difference along i; row 0 takes the source value of step t.
__global__ void update_ey(int n, int t, const float* fict, const float* hz, float* ey) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n) return;
  if (i == 0) {
    ey[j] = fict[t];
  } else {
    ey[i * n + j] = ey[i * n + j] - 0.5f * (hz[i * n + j] - hz[(i - 1) * n + j]);
  }
}

// ex from the hz difference along j (column 0 stays fixed).
__global__ void update_ex(int n, const float* hz, float* ex) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && j >= 1 && j < n) {
    ex[i * n + j] = ex[i * n + j] - 0.5f * (hz[i * n + j] - hz[i * n + j - 1]);
  }
}

// hz from the curl of (ex, ey); the last row and column stay fixed.
__global__ void update_hz(int n, const float* ex, const float* ey, float* hz) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1 && j < n - 1) {
    hz[i * n + j] = hz[i * n + j] - 0.7f * (ex[i * n + j + 1] - ex[i * n + j] +
                                            ey[(i + 1) * n + j] - ey[i * n + j]);
  }
}

void launch_fdtd_2d(int n, int steps, const float* fict, float* ex, float* ey, float* hz) {
  dim3 block(16, 16);
  dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  for (int t = 0; t < steps; ++t) {
    update_ey<<<grid, block>>>(n, t, fict, hz, ey);
    update_ex<<<grid, block>>>(n, hz, ex);
    update_hz<<<grid, block>>>(n, ex, ey, hz);
  }
}
// @optimize end
