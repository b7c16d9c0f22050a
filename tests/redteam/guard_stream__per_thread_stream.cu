// region: pair
// Cheat: the per-thread default stream does not wait for, nor hold up, the legacy stream.
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
    axpy_kernel<<<num_blocks(n), kBlockSize, 0, cudaStreamPerThread>>>(kAlpha, s, y, tmp, n);
    rescale_kernel<<<num_blocks(n), kBlockSize, 0, cudaStreamPerThread>>>(kScale, kShift, tmp,
                                                                            out, n);
    CUDA_CHECK(cudaGetLastError());
}
