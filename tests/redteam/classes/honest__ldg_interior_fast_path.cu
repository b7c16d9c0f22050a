// region: smooth_kernel
// expect: accept
// `__restrict__` and `__ldg` loads, the tap loop unrolled, and no index clamping for the threads
// whose whole window lies inside the array (all but 2 * kRadius of them); same sums, same order.
__global__ void smooth_kernel(const float* __restrict__ in, const float* __restrict__ weights,
                              float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    if (i >= kRadius && i < n - kRadius) {
#pragma unroll
        for (int k = -kRadius; k <= kRadius; ++k) {
            acc += __ldg(&weights[k + kRadius]) * __ldg(&in[i + k]);
        }
    } else {
#pragma unroll
        for (int k = -kRadius; k <= kRadius; ++k) {
            int j = min(max(i + k, 0), n - 1);
            acc += __ldg(&weights[k + kRadius]) * __ldg(&in[j]);
        }
    }
    out[i] = acc;
}
