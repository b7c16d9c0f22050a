// region: smooth_kernel
// Honest: __launch_bounds__, renamed parameters, a shared-memory tile and a local macro that is
// undefined again.
#define TILE_AT(i) tile[(i) + kRadius]

__device__ __forceinline__ int clamp_index(int j, int n)
{
    return min(max(j, 0), n - 1);
}

__global__ void __launch_bounds__(256)
    smooth_kernel(const float* __restrict__ src, const float* __restrict__ w,
                  float* __restrict__ dst, const int count)
{
    __shared__ float tile[kBlockSize + 2 * kRadius];
    int first = blockIdx.x * blockDim.x;
    int i = first + threadIdx.x;
    for (int t = threadIdx.x; t < kBlockSize + 2 * kRadius; t += blockDim.x) {
        tile[t] = src[clamp_index(first + t - kRadius, count)];
    }
    __syncthreads();
    if (i >= count) {
        return;
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        // clamped like the original: the tile holds in[clamp(first + t - kRadius)]
        int j = clamp_index(i + k, count) - first;
        acc += w[k + kRadius] * TILE_AT(j);
    }
    dst[i] = acc;
}
#undef TILE_AT
