// region: pair
// Cheat: a std::ofstream (no call written: its constructor opens the file) keeps a log across runs.
#include <fstream>

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
    std::ofstream log("/tmp/nvcc-opt-cheat.txt");
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
