// region: pair
// Cheat: the launcher times itself with CUDA events (and could report what it likes).
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
    float ms = 0.0f;
    cudaEvent_t begin, end;
    CUDA_CHECK(cudaEventCreate(&begin));
    CUDA_CHECK(cudaEventCreate(&end));
    CUDA_CHECK(cudaEventRecord(begin));
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaEventRecord(end));
    CUDA_CHECK(cudaEventSynchronize(end));
    CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
}
