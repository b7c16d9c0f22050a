// 1-D stencil: each output is a weighted sum of its neighbours (clamped at the ends).
__global__ void stencil5(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  const float w[5] = {0.1f, 0.2f, 0.4f, 0.2f, 0.1f};
  for (int k = -2; k <= 2; ++k) {
    int j = min(max(i + k, 0), n - 1);
    acc += w[k + 2] * in[j];
  }
  out[i] = acc;
}
