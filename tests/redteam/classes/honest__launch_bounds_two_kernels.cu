// region: pair
// expect: accept
// The two kernels kept, each with `__restrict__` pointers and `__launch_bounds__(kBlockSize, 8)`
// (eight blocks per multiprocessor), launched as before.
__global__ void __launch_bounds__(kBlockSize, 8)
    axpy_kernel(float alpha, const float* __restrict__ s, const float* __restrict__ y,
                float* __restrict__ tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = alpha * s[i] + y[i];
    }
}

__global__ void __launch_bounds__(kBlockSize, 8)
    rescale_kernel(float scale, float shift, const float* __restrict__ tmp,
                   float* __restrict__ out, int n)
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
}
