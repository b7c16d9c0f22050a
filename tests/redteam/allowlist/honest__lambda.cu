// region: pair
// Honest: a device lambda does the element work and a host lambda computes the grid.
__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    auto axpy = [alpha](float a, float b) { return alpha * a + b; };
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = axpy(s[i], y[i]);
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
    auto grid = [](int count) { return (count + kBlockSize - 1) / kBlockSize; };
    axpy_kernel<<<grid(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<grid(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
