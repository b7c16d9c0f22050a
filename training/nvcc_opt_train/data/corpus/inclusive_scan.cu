// Inclusive prefix sum within each block of 256 elements (Hillis-Steele in shared memory).
__global__ void block_scan(const float* in, float* out, int n) {
  __shared__ float buf[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    float add = threadIdx.x >= offset ? buf[threadIdx.x - offset] : 0.0f;
    __syncthreads();
    buf[threadIdx.x] += add;
    __syncthreads();
  }
  if (i < n) out[i] = buf[threadIdx.x];
}
