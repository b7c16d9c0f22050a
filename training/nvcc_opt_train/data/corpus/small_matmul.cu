// Many independent 4x4 matrix products: matrix m occupies 16 consecutive floats.
__global__ void batched_matmul4(const float* A, const float* B, float* C, int count) {
  int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= count) return;
  const float* a = A + 16 * m;
  const float* b = B + 16 * m;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      float acc = 0.0f;
      for (int k = 0; k < 4; ++k) acc += a[4 * r + k] * b[4 * k + c];
      C[16 * m + 4 * r + c] = acc;
    }
}
