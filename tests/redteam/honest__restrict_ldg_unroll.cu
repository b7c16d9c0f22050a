// region: smooth_kernel
// Honest: the example rewrite (__restrict__, __ldg, #pragma unroll).
__global__ void smooth_kernel(const float* __restrict__ in, const float* __restrict__ weights,
                              float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += __ldg(&weights[k + kRadius]) * __ldg(&in[j]);
    }
    out[i] = acc;
}

