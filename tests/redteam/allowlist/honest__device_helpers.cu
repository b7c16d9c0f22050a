// region: pair
// Honest: the element-wise work moves into __device__ helpers, one of them __forceinline__.
__device__ __forceinline__ float axpy_one(float alpha, float s, float y)
{
    return fmaf(alpha, s, y);
}

static __device__ __noinline__ float rescale_one(float scale, float shift, float t)
{
    return scale * t + shift;
}

__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = axpy_one(alpha, s[i], y[i]);
    }
}

__global__ void rescale_kernel(float scale, float shift, const float* tmp, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = rescale_one(scale, shift, tmp[i]);
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
