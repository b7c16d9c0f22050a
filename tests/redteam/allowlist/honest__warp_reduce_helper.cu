// region: smooth_kernel
// Honest: a templated __device__ helper with __shfl_down_sync and __builtin_expect.
template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    float total = warp_sum(i < n ? 1.0f : 0.0f);
    if (__builtin_expect(i < n && total > 0.0f, 1)) {
        out[i] = acc;
    }
}
