// All-pairs interaction in 1-D: each particle sums a softened inverse-square pull from the
// particles of a window around it.
__global__ void pull(const float* pos, const float* mass, float* force, int n, int window) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float f = 0.0f;
  for (int j = max(i - window, 0); j < min(i + window + 1, n); ++j) {
    float d = pos[j] - pos[i];
    f += mass[j] * d / powf(d * d + 0.01f, 1.5f);
  }
  force[i] = f;
}
