// Square matrix product C = A B (N x N) with 16 x 16 tiles staged in shared memory.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {
  __shared__ float ta[16][16], tb[16][16];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < N; t += 16) {
    ta[threadIdx.y][threadIdx.x] = (row < N && t + threadIdx.x < N) ? A[row * N + t + threadIdx.x] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < N) ? B[(t + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < N && col < N) C[row * N + col] = acc;
}
