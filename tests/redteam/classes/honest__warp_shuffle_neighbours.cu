// region: smooth_kernel
// expect: accept
// Each lane loads its own element once; neighbours inside the warp come from `__shfl_sync`, and
// only the lanes whose window crosses the warp's edge load the rest from global memory.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    constexpr unsigned kAllLanes = 0xffffffffu;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    float mine = in[min(i, n - 1)];  // every lane takes part in the shuffles, also past n
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        int from = lane + k;
        float v = __shfl_sync(kAllLanes, mine, from & 31);
        if (from < 0 || from >= 32) {
            v = in[min(max(i + k, 0), n - 1)];
        }
        acc += weights[k + kRadius] * v;
    }
    if (i < n) {
        out[i] = acc;
    }
}
