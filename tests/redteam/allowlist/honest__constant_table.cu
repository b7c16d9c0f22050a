// region: smooth_kernel
// Honest: a __constant__ table of tap offsets and a const scale, read by every thread.
__constant__ int c_offsets[2 * kRadius + 1] = {-4, -3, -2, -1, 0, 1, 2, 3, 4};
__constant__ float c_unit(1.0f);
__device__ const int d_taps = 2 * kRadius + 1;

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    static_assert(kRadius == 4, "the offset table is written for kRadius == 4");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < d_taps; ++k) {
        int j = min(max(i + c_offsets[k], 0), n - 1);
        acc += weights[k] * in[j];
    }
    out[i] = acc * c_unit;
}
