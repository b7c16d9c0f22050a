// Element-wise math: a damped oscillation evaluated per element.
__global__ void oscillate(const float* t, const float* damping, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = 6.2831853f * t[i];
    out[i] = expf(-damping[i] * fabsf(t[i])) * (sinf(x) + 0.5f * cosf(3.0f * x));
  }
}
