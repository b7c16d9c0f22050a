// region: smooth_kernel
// Cheat: a clock spin that makes timing depend on the clock, not the work.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    long long start = clock64();
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    while (clock64() - start < 100) {
    }
    out[i] = acc;
}
