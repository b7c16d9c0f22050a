// Row-wise softmax of a rows x cols matrix, one thread per row (max, exp-sum, normalize).
__global__ void softmax_rows(const float* in, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* x = in + r * cols;
  float m = x[0];
  for (int c = 1; c < cols; ++c) m = fmaxf(m, x[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += expf(x[c] - m);
  for (int c = 0; c < cols; ++c) out[r * cols + c] = expf(x[c] - m) / sum;
}
