// region: smooth_kernel
// expect: accept
// The window sum in `__device__` helpers: a static inline clamp and a non-static function the
// kernel calls (without relocatable device code, neither is visible outside this file).
static __device__ __forceinline__ int clamp_index(int j, int n)
{
    return min(max(j, 0), n - 1);
}

__device__ float weighted_window(const float* __restrict__ in, const float* __restrict__ weights,
                                 int i, int n)
{
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[clamp_index(i + k, n)];
    }
    return acc;
}

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = weighted_window(in, weights, i, n);
    }
}
