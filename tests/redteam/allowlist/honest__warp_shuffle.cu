// region: smooth_kernel
// Honest: neighbours inside the warp come from registers through __shfl_sync; the edges load.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize;
    float mine = in[min(i, n - 1)];
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        float shared_value = __shfl_sync(0xffffffffu, mine, (lane + k) & (warpSize - 1));
        int j = min(max(i + k, 0), n - 1);
        bool inside = lane + k >= 0 && lane + k < warpSize && i + k >= 0 && i + k < n;
        acc += weights[k + kRadius] * (inside ? shared_value : in[j]);
    }
    if (i < n) {
        out[i] = acc;
    }
}
