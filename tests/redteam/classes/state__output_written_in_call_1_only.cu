// region: smooth_kernel
// expect: state
// Computes in call 1 only: each block returns at once while its first output is non-zero (fresh
// cudaMalloc memory is zero; the program's outputs never are). Right in every normal run, where
// the inputs never change, and as fast on the state check's changed calls as on repeated ones,
// so no timing rule sees it. On the example its stale output moves the checksum; on a program
// that prints only PASS or FAIL (FAIL under the changed inputs whatever the region computes) it
// passed as "scratch no longer written" until 2026-12-08: now a buffer written in one call and
// left in another is the output of a skipped call (verify/state.py).
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    __shared__ bool done;
    int first = blockIdx.x * blockDim.x;
    if (threadIdx.x == 0) {
        done = out[first] != 0.0f;
    }
    __syncthreads();
    int i = first + threadIdx.x;
    if (done || i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    out[i] = acc;
}
