#include <cuda_runtime.h>

#include "kernel.h"

// One thread per zone; neighbouring zones share nodes, so the adds are atomic.
// @optimize
__global__ void nodal_accumulation(const double* zone_vals, double* node_vals, int n) {
  long z = (long)blockIdx.x * blockDim.x + threadIdx.x;
  long nz = (long)n * n * n;
  if (z >= nz) return;
  int i = z % n;
  int j = (z / n) % n;
  int k = z / ((long)n * n);
  long np = n + 1;
  long base = i + np * (j + np * k);
  double share = 0.125 * zone_vals[z];
  atomicAdd(&node_vals[base], share);
  atomicAdd(&node_vals[base + 1], share);
  atomicAdd(&node_vals[base + np], share);
  atomicAdd(&node_vals[base + np + 1], share);
  atomicAdd(&node_vals[base + np * np], share);
  atomicAdd(&node_vals[base + np * np + 1], share);
  atomicAdd(&node_vals[base + np * np + np], share);
  atomicAdd(&node_vals[base + np * np + np + 1], share);
}

cudaError_t launch_nodal_accumulation(const double* zone_vals, double* node_vals, int n) {
  long np = n + 1;
  cudaError_t err = cudaMemsetAsync(node_vals, 0, np * np * np * sizeof(double));
  if (err != cudaSuccess) return err;
  long zones = (long)n * n * n;
  const int block = 256;
  nodal_accumulation<<<(zones + block - 1) / block, block>>>(zone_vals, node_vals, n);
  return cudaGetLastError();
}
