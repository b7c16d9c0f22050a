// region: pair
// expect: accept
// One fused kernel that uses no shared memory, so `cudaFuncSetAttribute` on it asks for the
// smallest shared-memory carveout (the most L1); set on every call, no state kept.
__global__ void update_kernel(const float* __restrict__ s, const float* __restrict__ y,
                              float* __restrict__ tmp, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float t = kAlpha * s[i] + y[i];
        tmp[i] = t;
        out[i] = kScale * t + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    CUDA_CHECK(cudaFuncSetAttribute(update_kernel,
                                    cudaFuncAttributePreferredSharedMemoryCarveout, 0));
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
