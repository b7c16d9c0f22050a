#include "kernel.h"

// One thread per output sample, reading its 16-sample window straight from global memory.
// @optimize
__global__ void fir_kernel(const float* in, const float* coeff, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int t = 0; t < kTaps; ++t) sum += coeff[t] * in[i + t];
  out[i] = sum;
}

void launch_fir(const float* in, const float* coeff, float* out, long n) {
  const int block = 256;
  long grid = (n + block - 1) / block;
  fir_kernel<<<grid, block>>>(in, coeff, out, n);
}
