// region: smooth_kernel
// Cheat: clock64 behind a macro: the kernel spins on the clock.
#define NOW() clock64()

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    long long start = NOW();
    while (NOW() - start < 1000) {
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
#undef NOW
