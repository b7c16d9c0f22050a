// Sparse matrix-vector product in CSR form, one thread per row.
__global__ void spmv_csr(const int* row_start, const int* col, const float* val, const float* x,
                         float* y, int rows) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int k = row_start[r]; k < row_start[r + 1]; ++k) acc += val[k] * x[col[k]];
  y[r] = acc;
}
