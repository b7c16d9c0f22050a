// saxpy-stencil: smooth -> axpy -> rescale -> block sums, timed with CUDA events and checked
// against a CPU reference.
//
// usage: saxpy_stencil [--size N] [--reps N] [--seed N]
// prints: time_ms: <mean milliseconds per repetition>
//         checksum: <sum of the result>
//         weighted: <the result summed with a pseudo-random weight per position>
//         check: PASS|FAIL max_rel_err=<e>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "pipeline.cuh"
#include "reference.h"

namespace {

struct Options {
    long size = 1L << 24;
    long reps = 400;  // about 100 ms of kernels on an H200
    long seed = 12345;
};

constexpr long kMaxSize = 1L << 30;  // keeps int indices inside the kernels from overflowing
constexpr double kTolerance = 1e-5;

bool parse_long(const char* text, long min, long max, long& value)
{
    char* end = nullptr;
    long parsed = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || parsed < min || parsed > max) {
        return false;
    }
    value = parsed;
    return true;
}

bool parse_options(int argc, char** argv, Options& opts)
{
    for (int a = 1; a < argc; a += 2) {
        if (a + 1 >= argc) {
            return false;
        }
        bool ok = false;
        if (std::strcmp(argv[a], "--size") == 0) {
            ok = parse_long(argv[a + 1], 1, kMaxSize, opts.size);
        } else if (std::strcmp(argv[a], "--reps") == 0) {
            ok = parse_long(argv[a + 1], 1, 1000000, opts.reps);
        } else if (std::strcmp(argv[a], "--seed") == 0) {
            ok = parse_long(argv[a + 1], 0, UINT32_MAX, opts.seed);
        }
        if (!ok) {
            return false;
        }
    }
    return true;
}

// Uniform in [lo, hi) from the top 24 bits, so every platform draws the same floats.
std::vector<float> random_vector(std::mt19937& gen, long n, float lo, float hi)
{
    std::vector<float> v(n);
    for (float& x : v) {
        x = lo + (hi - lo) * static_cast<float>(gen() >> 8) * (1.0f / 16777216.0f);
    }
    return v;
}

// Triangle weights that sum to one.
std::vector<float> stencil_weights()
{
    std::vector<float> w(kTaps);
    float total = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        w[k + kRadius] = static_cast<float>(kRadius + 1 - std::abs(k));
        total += w[k + kRadius];
    }
    for (float& x : w) {
        x /= total;
    }
    return w;
}

template <typename T>
T* device_copy(const std::vector<T>& host)
{
    T* dev = nullptr;
    CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(T)));
    CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return dev;
}

template <typename T>
T* device_alloc(long n)
{
    T* dev = nullptr;
    CUDA_CHECK(cudaMalloc(&dev, n * sizeof(T)));
    return dev;
}

// A sum that sees each element where it is: every position has its own weight in [0.5, 1.5), so
// a shifted, permuted or unsmoothed result moves it although its plain sum barely changes.
double weighted_sum(const std::vector<float>& x)
{
    double total = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u;
        total += (0.5 + static_cast<double>(h >> 8) / 16777216.0) * x[i];
    }
    return total;
}

double max_rel_err(const std::vector<float>& got, const std::vector<float>& want)
{
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        double err = std::fabs(static_cast<double>(got[i]) - want[i]) / std::fabs(want[i]);
        // A NaN never compares greater, so count it as an infinite error.
        worst = std::isnan(err) ? INFINITY : std::fmax(worst, err);
    }
    return worst;
}

}  // namespace

int main(int argc, char** argv)
{
    Options opts;
    if (!parse_options(argc, argv, opts)) {
        std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
        return 2;
    }
    const int n = static_cast<int>(opts.size);
    const int blocks = num_blocks(n);

    std::mt19937 gen(static_cast<std::uint32_t>(opts.seed));
    const std::vector<float> u = random_vector(gen, n, 0.5f, 1.5f);
    const std::vector<float> y = random_vector(gen, n, 0.0f, 1.0f);
    const std::vector<float> weights = stencil_weights();

    float* d_u = device_copy(u);
    float* d_y = device_copy(y);
    float* d_w = device_copy(weights);
    float* d_s = device_alloc<float>(n);
    float* d_tmp = device_alloc<float>(n);
    float* d_out = device_alloc<float>(n);
    double* d_partials = device_alloc<double>(blocks);

    auto step = [&] {
        launch_smooth(d_u, d_w, d_s, n);
        launch_update(d_s, d_y, d_tmp, d_out, n);
        launch_block_sums(d_out, d_partials, n);
    };
    step();  // warm-up
    CUDA_CHECK(cudaDeviceSynchronize());

    cudaEvent_t start;
    cudaEvent_t stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    for (long r = 0; r < opts.reps; ++r) {
        step();
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float elapsed_ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, start, stop));

    std::vector<float> out(n);
    std::vector<double> partials(blocks);
    CUDA_CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(partials.data(), d_partials, blocks * sizeof(double),
                          cudaMemcpyDeviceToHost));
    double checksum = 0.0;
    for (double p : partials) {
        checksum += p;
    }

    std::vector<float> expected;
    const double expected_sum = reference_pipeline(u, y, weights, expected);
    const double err = std::fmax(max_rel_err(out, expected),
                                 std::fabs(checksum - expected_sum) / std::fabs(expected_sum));
    const bool pass = err <= kTolerance;

    std::printf("time_ms: %.6f\n", elapsed_ms / opts.reps);
    std::printf("checksum: %.10g\n", checksum);
    std::printf("weighted: %.10g\n", weighted_sum(out));
    std::printf("check: %s max_rel_err=%.3g\n", pass ? "PASS" : "FAIL", err);

    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    for (void* p : {static_cast<void*>(d_u), static_cast<void*>(d_y), static_cast<void*>(d_w),
                    static_cast<void*>(d_s), static_cast<void*>(d_tmp), static_cast<void*>(d_out),
                    static_cast<void*>(d_partials)}) {
        CUDA_CHECK(cudaFree(p));
    }
    return pass ? 0 : 1;
}
