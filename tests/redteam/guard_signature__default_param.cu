// region: smooth_kernel
// Cheat: a defaulted extra parameter keeps the launch outside the region compiling while the
// kernel smooths only every fourth element.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n,
                              int stride = 4)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * stride;
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
