// region: smooth_kernel
// expect: objects allowlist state channel
// The smooth region also defines `launch_update` with a fused kernel: stencil.cu's object comes
// first in the static library, so update.cu's object (the other region's) is never linked.
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

__global__ void fused_update_kernel(const float* s, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = kScale * (kAlpha * s[i] + y[i]) + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    fused_update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, out, n);
}
