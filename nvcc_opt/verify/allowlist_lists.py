"""The allowlist's lists: attributes, pragmas and CUDA built-in variables a candidate may use,
CUDA runtime calls and compiler builtins it may call, the toolkit functions it may not, the parts
of the toolkit and of the standard library whose functions compute values only, the launch
streams and the primitive type names. Data only; `allowlist_rules` applies them.
"""

from __future__ import annotations

from nvcc_opt.verify.declarations import word_set

ALLOWED_ATTRIBUTES = word_set(
    "global device host shared constant launch_bounds maxnreg local_maxnreg cluster_dims "
    "block_size grid_constant noinline always_inline nv_inline_hint aligned unused maybe_unused "
    "nodiscard deprecated fallthrough likely unlikely"
)
ALLOWED_PRAGMAS = frozenset(("unroll", "nounroll"))
CUDA_BUILTINS = frozenset(("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"))
# CUDA runtime calls that only configure the candidate's own kernels or read fixed device facts
# (the occupancy calculator reads a kernel's attributes and the device's limits).
RUNTIME_CALLS = word_set(
    "cudaFuncSetAttribute cudaFuncSetCacheConfig cudaGetLastError cudaPeekAtLastError "
    "cudaGetErrorString cudaGetErrorName cudaGetDevice cudaDeviceGetAttribute "
    "cudaGetDeviceProperties cudaGetDeviceCount cudaFuncGetAttributes cudaRuntimeGetVersion "
    "cudaDriverGetVersion cudaOccupancyMaxActiveBlocksPerMultiprocessor "
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags cudaOccupancyMaxPotentialBlockSize "
    "cudaOccupancyAvailableDynamicSMemPerBlock"
)
# Compiler builtins with no effect beyond their value (hints, bit tricks, constants, math).
BUILTINS = word_set(
    "__builtin_expect __builtin_expect_with_probability __builtin_assume_aligned "
    "__builtin_assume __builtin_unreachable __builtin_constant_p __builtin_addressof "
    "__builtin_is_constant_evaluated __builtin_launder __builtin_bit_cast __builtin_offsetof "
    "__builtin_clz __builtin_clzl __builtin_clzll __builtin_ctz __builtin_ctzl __builtin_ctzll "
    "__builtin_popcount __builtin_popcountl __builtin_popcountll __builtin_parity "
    "__builtin_bswap16 __builtin_bswap32 __builtin_bswap64 __builtin_ffs __builtin_ffsll "
    "__builtin_huge_val __builtin_huge_valf __builtin_inf __builtin_inff __builtin_nan "
    "__builtin_nanf __builtin_isnan __builtin_isinf __builtin_isfinite __builtin_fabs "
    "__builtin_fabsf __builtin_sqrt __builtin_sqrtf __builtin_fma __builtin_fmaf "
    "__builtin_memcpy __builtin_memset __builtin_prefetch"
)
# Toolkit functions that touch more than the candidate's own data: device printf and heap,
# clocks and sleeps (by name: `clock64`, `__nanosleep`, `get_sreg_globaltimer`, chrono `now`).
REFUSED_TOOLKIT = frozenset(("printf", "vprintf", "malloc", "free", "now", "time"))
TIMER_PARTS = ("clock", "timer", "sleep")
# Parts of the toolkit whose host-callable functions compute values only (math, conversions,
# vector types, cooperative groups, libcu++); elsewhere (cudart, cuBLAS, thrust, device-wide
# CUB) a host-callable toolkit function is a library doing work. Paths under nvcc's include dir.
PURE_TOOLKIT = (
    "crt/", "cooperative_groups", "cuda/", "nv/", "cccl/cuda/", "cccl/nv/", "mma.h", "sm_",
    "device_", "vector_", "math_", "cuda_fp", "cuda_bf16", "cuComplex.h", "cuda_pipeline",
    "cuda_awbarrier", "texture_", "surface_", "builtin_types.h", "host_defines.h",
    "common_functions.h", "cuda_texture_types.h", "cuda_surface_types.h",
)  # fmt: skip
# System headers (by file name) whose functions and constructors compute values only.
PURE_STD = word_set(
    "type_traits limits utility tuple array initializer_list complex numeric numbers bit "
    "ratio cmath math.h mathcalls.h mathcalls-narrow.h std_abs.h stl_algobase.h stl_algo.h "
    "stl_numeric.h stl_pair.h move.h utility.h stl_iterator.h stl_iterator_base_funcs.h "
    "stl_function.h predefined_ops.h cstdint stdint.h cstddef stddef.h cstring string.h "
    "mathcalls-helper-functions.h specfun.h algorithmfwd.h stl_heap.h ptr_traits.h invoke.h "
    "ranges_base.h"
)
STREAMS = frozenset(("0", "nullptr", "NULL", "__null", "0L", "0l", "0u", "0U"))
PRIMITIVE = word_set(
    "void auto bool char short int long unsigned signed float double wchar_t char8_t char16_t "
    "char32_t size_t ptrdiff_t __int128 _Float16 __fp16 decltype"
)
