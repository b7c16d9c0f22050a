// region: smooth_kernel
// Honest: __launch_bounds__ with a minimum of blocks per multiprocessor, and __restrict__.
__global__ void __launch_bounds__(kBlockSize, 4)
    smooth_kernel(const float* __restrict__ in, const float* __restrict__ weights,
                  float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
