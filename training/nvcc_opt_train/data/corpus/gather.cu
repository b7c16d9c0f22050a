// Gather through a computed index: out[i] = in[perm(i)], perm a fixed scrambling of 0..n-1.
__device__ int scramble(int i, int n) {
  return static_cast<int>((static_cast<long long>(i) * 40503LL + 12345LL) % n);
}

__global__ void gather(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[scramble(i, n)];
}
