// region: pair
// Cheat: the work is split over host threads with OpenMP (each launching on its own stream).
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
    int half = n / 2;
#pragma omp parallel for
    for (int part = 0; part < 2; ++part) {
        int first = part * half;
        int count = part == 0 ? half : n - half;
        axpy_kernel<<<num_blocks(count), kBlockSize>>>(kAlpha, s + first, y + first,
                                                       tmp + first, count);
        rescale_kernel<<<num_blocks(count), kBlockSize>>>(kScale, kShift, tmp + first,
                                                          out + first, count);
    }
    CUDA_CHECK(cudaGetLastError());
}
