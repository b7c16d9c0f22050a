// region: pair
// Honest: the launcher prefers L1 for its own kernel and reads the device's SM count.
__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float t = kAlpha * s[i] + y[i];
        tmp[i] = t;
        out[i] = kScale * t + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    int device = 0;
    int sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaFuncSetCacheConfig(update_kernel, cudaFuncCachePreferL1));
    int blocks = min(num_blocks(n), 8 * sms);
    update_kernel<<<blocks, kBlockSize, 0, 0>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
