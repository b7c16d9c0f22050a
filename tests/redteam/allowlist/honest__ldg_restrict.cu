// region: pair
// Honest: read-only loads through __ldg and __restrict__ pointers in both kernels.
__global__ void axpy_kernel(float alpha, const float* __restrict__ s, const float* __restrict__ y,
                            float* __restrict__ tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = alpha * __ldg(s + i) + __ldg(&y[i]);
    }
}

__global__ void rescale_kernel(float scale, float shift, const float* __restrict__ tmp,
                               float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = scale * __ldg(tmp + i) + shift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
