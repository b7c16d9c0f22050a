// Dense matrix-vector product y = A x, one thread per row of a rows x cols matrix.
__global__ void matvec(const float* A, const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int c = 0; c < cols; ++c) acc += A[r * cols + c] * x[c];
  y[r] = acc;
}
