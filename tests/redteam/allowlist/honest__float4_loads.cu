// region: pair
// Honest: axpy and rescale read and write four floats at a time through float4, with a tail.
__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    int quads = n / 4;
    if (q < quads) {
        float4 a = reinterpret_cast<const float4*>(s)[q];
        float4 b = reinterpret_cast<const float4*>(y)[q];
        float4 r = make_float4(alpha * a.x + b.x, alpha * a.y + b.y, alpha * a.z + b.z,
                               alpha * a.w + b.w);
        reinterpret_cast<float4*>(tmp)[q] = r;
    }
    for (int i = quads * 4 + q; q < 4 && i < n; i += 4) {
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
    axpy_kernel<<<num_blocks(n / 4 + 4), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
