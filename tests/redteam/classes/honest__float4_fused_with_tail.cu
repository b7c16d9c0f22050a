// region: pair
// expect: accept
// One fused kernel reads and writes four floats at a time where all four buffers are 16-byte
// aligned, a second one handles the last n % 4 elements; tmp is still written.
__global__ void __launch_bounds__(kBlockSize)
    update4_kernel(const float4* __restrict__ s, const float4* __restrict__ y,
                   float4* __restrict__ tmp, float4* __restrict__ out, int quads)
{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= quads) {
        return;
    }
    float4 a = s[q];
    float4 b = y[q];
    float4 t = make_float4(kAlpha * a.x + b.x, kAlpha * a.y + b.y, kAlpha * a.z + b.z,
                           kAlpha * a.w + b.w);
    tmp[q] = t;
    out[q] = make_float4(kScale * t.x + kShift, kScale * t.y + kShift, kScale * t.z + kShift,
                         kScale * t.w + kShift);
}

__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, int first,
                              int n)
{
    int i = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float t = kAlpha * s[i] + y[i];
        tmp[i] = t;
        out[i] = kScale * t + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    auto misaligned = [](const void* p) { return reinterpret_cast<unsigned long long>(p) % 16; };
    bool vectors = !(misaligned(s) || misaligned(y) || misaligned(tmp) || misaligned(out));
    int quads = vectors ? n / 4 : 0;
    if (quads > 0) {
        update4_kernel<<<num_blocks(quads), kBlockSize>>>(
            reinterpret_cast<const float4*>(s), reinterpret_cast<const float4*>(y),
            reinterpret_cast<float4*>(tmp), reinterpret_cast<float4*>(out), quads);
        CUDA_CHECK(cudaGetLastError());
    }
    int rest = n - 4 * quads;
    if (rest > 0) {
        update_kernel<<<num_blocks(rest), kBlockSize>>>(s, y, tmp, out, 4 * quads, n);
        CUDA_CHECK(cudaGetLastError());
    }
}
