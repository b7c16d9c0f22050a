#include "kernel.h"

// @optimize
__global__ void histogram_kernel(const int* values, unsigned int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[values[i]], 1u);
}

void launch_histogram(const int* values, unsigned int* bins, int n) {
  const int block = 256;
  // Cleared every call so that repeated launches give the same counts.
  cudaMemsetAsync(bins, 0, sizeof(unsigned int) * kBins);
  histogram_kernel<<<(n + block - 1) / block, block>>>(values, bins, n);
}
