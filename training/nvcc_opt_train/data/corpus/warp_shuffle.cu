// Warp-level sum with shuffles: each warp of 32 consecutive elements writes its total.
__global__ void warp_sums(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0 && i < n) out[i / 32] = v;
}
