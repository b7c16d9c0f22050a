// region: pair
// Honest: comments, strings and switched-off code that mention forbidden things.
// Not cudaStreamCreate, not std::thread, not cudaGraphLaunch, not cublasSaxpy.
/* static __device__ float cache[1024]; #define num_blocks(n) 1 */
#include <cuda_fp16.h>

#if 0
void unused() { cudaStream_t s; cudaStreamCreate(&s); }
#endif

__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = alpha * s[i] + y[i];
    }
}

__global__ void rescale_kernel(const float scale, const float shift, const float* tmp, float* out,
                               int n)
{
    static_assert(sizeof(float) == 4, "clock64() and cudaMemcpy are not used here");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = scale * tmp[i] + shift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    static const char* const kWhat = "cudaStreamCreate(&stream); asm(\"%globaltimer\")";
    (void)kWhat;
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
