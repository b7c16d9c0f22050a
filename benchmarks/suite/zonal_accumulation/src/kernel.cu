#include "kernel.h"

// One thread per zone: gather the 8 corner nodes and average them.
// @optimize
__global__ void zonal_accumulation(const double* node_vals, double* zone_vals, int n) {
  long z = (long)blockIdx.x * blockDim.x + threadIdx.x;
  long nz = (long)n * n * n;
  if (z >= nz) return;
  int i = z % n;
  int j = (z / n) % n;
  int k = z / ((long)n * n);
  long np = n + 1;
  long base = i + np * (j + np * k);
  double sum = node_vals[base] + node_vals[base + 1] + node_vals[base + np] +
               node_vals[base + np + 1] + node_vals[base + np * np] +
               node_vals[base + np * np + 1] + node_vals[base + np * np + np] +
               node_vals[base + np * np + np + 1];
  zone_vals[z] = 0.125 * sum;
}

void launch_zonal_accumulation(const double* node_vals, double* zone_vals, int n) {
  long zones = (long)n * n * n;
  const int block = 256;
  zonal_accumulation<<<(zones + block - 1) / block, block>>>(node_vals, zone_vals, n);
}
