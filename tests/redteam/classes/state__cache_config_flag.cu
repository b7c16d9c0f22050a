// region: pair
// expect: allowlist objects state
// A device setting as the flag: the device's cache preference is set to "equal" after the first
// update, and a call that reads it back returns without work.
__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, int n)
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
    cudaFuncCache preference = cudaFuncCachePreferNone;
    CUDA_CHECK(cudaDeviceGetCacheConfig(&preference));
    if (preference == cudaFuncCachePreferEqual) {
        return;
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferEqual));
}
