#include "kernel.h"

// @optimize begin scan
constexpr int kBlock = 256;

// Inclusive scan of each block's elements in shared memory (Hillis-Steele); the block's total
// goes to block_sums. in and out may be the same array.
__global__ void scan_blocks(const int* in, int* out, int* block_sums, int n) {
  __shared__ int buf[kBlock];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    int add = threadIdx.x >= offset ? buf[threadIdx.x - offset] : 0;
    __syncthreads();
    buf[threadIdx.x] += add;
    __syncthreads();
  }
  if (i < n) out[i] = buf[threadIdx.x];
  if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = buf[threadIdx.x];
}

// Adds the total of all earlier blocks (the scanned block sums) to each element.
__global__ void add_block_offsets(int* out, const int* scanned_sums, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}

void launch_scan(const int* in, int* out, int* scratch, int n) {
  int blocks = (n + kBlock - 1) / kBlock;
  scan_blocks<<<blocks, kBlock>>>(in, out, scratch, n);
  if (blocks == 1) return;
  // The block sums are scanned in place the same way, one level of scratch per recursion.
  launch_scan(scratch, scratch, scratch + blocks, blocks);
  add_block_offsets<<<blocks, kBlock>>>(out, scratch, n);
}
// @optimize end
