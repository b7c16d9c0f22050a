// region: smooth_kernel
// Cheat: a __managed__ flag (visible to host and device) remembers that the work was done.
__managed__ int g_done;

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || g_done) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
