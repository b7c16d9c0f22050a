// region: smooth_kernel
// expect: missing exit_status count numbers_differ
// Computes every element and writes each block's results in mirrored order: the same values,
// so the same sum, each at the wrong place.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int first = blockIdx.x * blockDim.x;
    int i = first + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    int last = min(first + static_cast<int>(blockDim.x), n) - 1;
    out[last - threadIdx.x] = acc;
}
