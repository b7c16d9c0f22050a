// region: smooth_kernel
// Honest: #pragma unroll, #pragma nounroll and a _Pragma("unroll") made by a local macro.
#define UNROLL_ALL _Pragma("unroll")

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float w[2 * kRadius + 1];
#pragma unroll 3
    for (int k = 0; k < 2 * kRadius + 1; ++k) {
        w[k] = weights[k];
    }
    float acc = 0.0f;
    UNROLL_ALL
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += w[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
#pragma nounroll
    for (int pass = 0; pass < 1; ++pass) {
        out[i] = acc;
    }
}
#undef UNROLL_ALL
