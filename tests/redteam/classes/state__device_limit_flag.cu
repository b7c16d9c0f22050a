// region: pair
// expect: allowlist objects state
// A device setting as the flag: the stack size limit is raised after the first update, and a
// call that reads it back raised returns without work.
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
    size_t stack = 0;
    CUDA_CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    if (stack >= 2048) {
        return;
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 2048));
}
