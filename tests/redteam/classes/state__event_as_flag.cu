// region: pair
// expect: guard_timer guard_static_buffer allowlist objects state
// A CUDA event as the flag: recorded after the first update; while it reports complete, calls
// return without work.
__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float t = kAlpha * s[i] + y[i];
        tmp[i] = t;
        out[i] = kScale * t + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    static cudaEvent_t updated = nullptr;
    if (updated != nullptr && cudaEventQuery(updated) == cudaSuccess) {
        return;
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    if (updated == nullptr) {
        CUDA_CHECK(cudaEventCreateWithFlags(&updated, cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaEventRecord(updated));
}
