// region: smooth_kernel
// expect: accept
// The clamped load as a lambda inside the kernel (capturing the input and its size by value).
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    auto at = [in, n](int j) { return in[min(max(j, 0), n - 1)]; };
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * at(i + k);
    }
    out[i] = acc;
}
