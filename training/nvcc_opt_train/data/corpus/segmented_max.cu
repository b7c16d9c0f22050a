// Per-segment maximum: segment s covers [s * len, (s + 1) * len); one thread per segment.
__global__ void segment_max(const float* in, float* out, int n, int len) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  int begin = s * len;
  if (begin >= n) return;
  int end = min(begin + len, n);
  float best = in[begin];
  for (int i = begin + 1; i < end; ++i) best = fmaxf(best, in[i]);
  out[s] = best;
}
