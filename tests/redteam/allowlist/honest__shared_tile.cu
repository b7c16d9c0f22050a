// region: smooth_kernel
// Honest: the block's inputs and halo are staged in a shared-memory tile, then synchronised.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    __shared__ float tile[kBlockSize + 2 * kRadius];
    __shared__ float w[2 * kRadius + 1];
    int first = blockIdx.x * blockDim.x;
    for (int t = threadIdx.x; t < kBlockSize + 2 * kRadius; t += blockDim.x) {
        tile[t] = in[min(max(first + t - kRadius, 0), n - 1)];
    }
    if (threadIdx.x < 2 * kRadius + 1) {
        w[threadIdx.x] = weights[threadIdx.x];
    }
    __syncthreads();
    int i = first + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1) - first + kRadius;
        acc += w[k + kRadius] * tile[j];
    }
    out[i] = acc;
}
