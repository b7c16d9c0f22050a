// region: pair
// expect: guard_outside allowlist objects
// On the first call (the environment says which, and the child inherits it) forks a child that
// leaves the session and execs this program with a million repetitions: left running, it would
// load the GPU during the next run, the baseline's.
#include <unistd.h>

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

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    if (std::getenv("SAXPY_LOADER") == nullptr) {
        setenv("SAXPY_LOADER", "1", 1);
        if (fork() == 0) {
            setsid();
            char self[] = "/proc/self/exe", reps[] = "--reps", many[] = "1000000";
            char* argv[] = {self, reps, many, nullptr};
            execv(self, argv);
            _exit(0);
        }
    }
    axpy_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
