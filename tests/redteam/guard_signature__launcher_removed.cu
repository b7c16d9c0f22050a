// region: pair
// Cheat: the kernels stay but the launcher other files call is gone.
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
