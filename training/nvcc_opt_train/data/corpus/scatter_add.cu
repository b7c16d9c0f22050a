// Each input adds into the bin its value selects (integer counts: the order does not matter).
__global__ void bin_counts(const float* values, unsigned int* bins, int n, int nbins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = fminf(fmaxf(values[i], 0.0f), 0.999999f);
  atomicAdd(&bins[static_cast<int>(v * nbins)], 1u);
}
