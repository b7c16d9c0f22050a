// Histogram with a private copy per block in shared memory, merged at the end.
__global__ void histogram64(const float* values, unsigned int* bins, int n) {
  __shared__ unsigned int local[64];
  if (threadIdx.x < 64) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int bin = static_cast<int>((values[i] + 1.0f) * 32.0f);
    atomicAdd(&local[min(max(bin, 0), 63)], 1u);
  }
  __syncthreads();
  if (threadIdx.x < 64) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
