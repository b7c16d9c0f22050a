// region: smooth_kernel
// Cheat: device malloc keeps a heap block the kernel never frees (a cache for the next launch).
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float* scratch = static_cast<float*>(malloc(sizeof(float)));
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    *scratch = acc;
    out[i] = *scratch;
}
