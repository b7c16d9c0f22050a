#include <cuda_fp16.h>
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    __half acc = __float2half(0.0f);
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc = __hadd(acc, __float2half(weights[k + kRadius] * in[j]));
    }
    out[i] = __half2float(acc);
}
