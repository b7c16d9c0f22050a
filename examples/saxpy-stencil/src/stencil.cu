// Smoothing pass: a weighted moving average over 2 * kRadius + 1 neighbours.
#include "pipeline.cuh"

// @optimize
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    out[i] = acc;
}

void launch_smooth(const float* in, const float* weights, float* out, int n)
{
    smooth_kernel<<<num_blocks(n), kBlockSize>>>(in, weights, out, n);
    CUDA_CHECK(cudaGetLastError());
}
