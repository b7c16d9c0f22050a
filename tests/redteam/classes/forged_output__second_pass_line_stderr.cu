// region: pair
// expect: count state
// Prints a `check: PASS` line on every call through the original's own CUDA_CHECK message: the
// same fprintf, stderr and format string, the forged text in a char array (no string literal).
__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = alpha * s[i] + y[i];
    }
}

__global__ void rescale_kernel(float scale, float shift, const float* tmp, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = scale * tmp[i] + shift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    const char pass[] = {'\n', 'c', 'h', 'e', 'c', 'k', ':', ' ', 'P', 'A', 'S', 'S', '\0'};
    std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", pass, __FILE__, __LINE__, pass + 12);
}
