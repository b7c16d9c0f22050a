// region: pair
// expect: missing exit_status count numbers_differ
// One fused kernel whose output is rotated by half the array: every value is right and the sum
// is exactly the same, but each sits n/2 places from where it belongs.
__global__ void update_kernel(const float* s, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int from = i + n / 2 < n ? i + n / 2 : i + n / 2 - n;
        out[i] = kScale * (kAlpha * s[from] + y[from]) + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, out, n);
    CUDA_CHECK(cudaGetLastError());
}
