// Horner evaluation of a degree-8 polynomial whose coefficients live in constant memory.
__constant__ float coeffs[9] = {1.0f, -0.5f, 0.25f, -0.125f, 0.0625f, -0.03125f, 0.015625f,
                                -0.0078125f, 0.00390625f};

__global__ void horner(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = coeffs[8];
  for (int k = 7; k >= 0; --k) acc = acc * x[i] + coeffs[k];
  y[i] = acc;
}
