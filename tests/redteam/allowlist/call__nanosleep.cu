// region: smooth_kernel
// Cheat: __nanosleep in the kernel (only on the device side, hidden under __CUDA_ARCH__).
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(100);
#endif
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
