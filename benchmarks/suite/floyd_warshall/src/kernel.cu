#include "kernel.h"

// Relaxes every pair (i, j) through node k. Row k and column k do not change during step k,
// so the update can be in place.
// @optimize
__global__ void floyd_warshall_step(int* dist, int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n && j < n) {
    int through_k = dist[i * n + k] + dist[k * n + j];
    if (through_k < dist[i * n + j]) dist[i * n + j] = through_k;
  }
}

void launch_floyd_warshall(int* dist, int n) {
  dim3 block(16, 16);
  dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  for (int k = 0; k < n; ++k) floyd_warshall_step<<<grid, block>>>(dist, n, k);
}
