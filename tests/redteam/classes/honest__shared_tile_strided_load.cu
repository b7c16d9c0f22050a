// region: smooth_kernel
// expect: accept
// The block's window (its elements and a halo of kRadius on each side, clamped at the ends) and
// the weights staged in shared memory by a strided loop, one `__syncthreads`, then the taps.
__global__ void __launch_bounds__(kBlockSize)
    smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    __shared__ float window[kBlockSize + 2 * kRadius];
    __shared__ float taps[kTaps];
    const int first = blockIdx.x * kBlockSize;
    for (int t = threadIdx.x; t < kBlockSize + 2 * kRadius; t += kBlockSize) {
        window[t] = in[min(max(first + t - kRadius, 0), n - 1)];
    }
    if (threadIdx.x < kTaps) {
        taps[threadIdx.x] = weights[threadIdx.x];
    }
    __syncthreads();
    int i = first + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += taps[k + kRadius] * window[threadIdx.x + kRadius + k];
    }
    out[i] = acc;
}
