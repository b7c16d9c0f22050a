#include "kernel.h"

// @optimize begin reduce_sum
constexpr int kBlock = 256;

// Each block sums kBlock consecutive inputs in shared memory and writes one partial sum.
__global__ void block_sum(const float* in, float* partial, int n) {
  __shared__ float buf[kBlock];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}

// One block adds up the remaining partial sums.
__global__ void final_sum(const float* partial, float* out, int n) {
  __shared__ float buf[kBlock];
  float acc = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = buf[0];
}

void launch_reduce_sum(const float* in, float* scratch, float* out, int n) {
  int blocks1 = (n + kBlock - 1) / kBlock;
  int blocks2 = (blocks1 + kBlock - 1) / kBlock;
  float* partial1 = scratch;
  float* partial2 = scratch + blocks1;
  block_sum<<<blocks1, kBlock>>>(in, partial1, n);
  block_sum<<<blocks2, kBlock>>>(partial1, partial2, blocks1);
  final_sum<<<1, kBlock>>>(partial2, out, blocks2);
}
// @optimize end
