#!/usr/bin/env bash
# Everything measured on the H200 in one call (results land in $OUT, then benchmarks/results/):
#   1. the GPU tests: the example's own check, the runtime red team, optimize's honest improvement
#      landing in the build, and the search policy's structural rewrites computing what the
#      originals do;
#   2. the example end to end: build through nvcc-opt, import, verify, accept, rebuild, run;
#   3. benchmark_code's noise behaviour (benchmarks/benchmark_code_noise.py), at the example's
#      full size (2^24 elements, 400 repetitions) and [run] repeats (10 pairs) unless overridden;
#   4. (PARTS=suite) `nvcc-opt bench suite --model search` on SUITE_ONLY apps (default: all), its
#      traces packed into suite/traces.tar.gz (merge the slices' reports with `nvcc-opt bench merge`).
#      For more than a few kernels, benchmarks/gpu_queue.sh runs them as a queue across calls.
#      SUITE_GPUS (e.g. 0,1,2,3 or all) passes --gpus: one app per GPU at once, on a machine with
#      several. At SUITE_S seconds (default 530) the bench gets SIGINT: it stops the runs in
#      flight (up to 30 s) and still writes the report of what finished; SIGKILL 40 s later.
#      No app starts after SUITE_START_S seconds (default SUITE_S - 240: a kernel takes about
#      2-4 minutes), so the limit rarely cuts one short; the apps left are listed as not started.
# Wheels the machine lacks travel in .whl/ (benchmarks/README.md, "gpu_session.sh").
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
source benchmarks/gpu_env.sh
export NVCC_OPT_STORE=/tmp/state/store.db XDG_CACHE_HOME=/tmp/cache
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nvcc --version | tail -2;
  cmake --version | head -1; python3 --version; } >"$OUT/machine.txt" 2>&1

step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
parts="${PARTS:-tests e2e noise}"  # a call has at most 10 minutes: run the parts in two calls
want() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

want tests && step "GPU tests" && timeout "${TESTS_S:-200}" python3 -m pytest -q -p no:cacheprovider -m gpu \
  ${GPU_TESTS:-tests/test_example_builds.py tests/test_redteam_gpu.py tests/test_tools_microbench.py tests/test_optimize_gpu.py tests/test_search_structure.py tests/test_search_fusion.py tests/test_search_tiling.py tests/test_search_privatize.py tests/test_tools_profile.py} \
  -rA 2>&1 | tail -40 | tee "$OUT/gpu_tests.log"

if want rebuild; then
  step "a second build through the launcher is a no-op (ninja -d explain)"
  rm -rf /tmp/rb && cp -r examples/saxpy-stencil /tmp/rb
  cmake -S /tmp/rb -B /tmp/rb/build -G Ninja -DCMAKE_CUDA_COMPILER_LAUNCHER=/tmp/bin/nvcc-opt >/dev/null
  cmake --build /tmp/rb/build -j 16 >/dev/null
  ninja -C /tmp/rb/build -d explain -n 2>&1 | head -20 | tee "$OUT/rebuild.log"
  ls -la --time-style=full-iso /tmp/state/stamps /tmp/rb/build/CMakeFiles/saxpy_kernels.dir/src/ \
    2>&1 | tee -a "$OUT/rebuild.log" | tail -12
fi

if want e2e; then
step "the example end to end"
work=/tmp/e2e
rm -rf "$work" && cp -r examples/saxpy-stencil "$work" && cd "$work" || exit 1
{
  cmake -S . -B build -G Ninja -DCMAKE_CUDA_COMPILER_LAUNCHER=/tmp/bin/nvcc-opt >/dev/null
  cmake --build build -j 16 | tail -1
  ./run.sh build
  nvcc-opt import rewrites.json
  time timeout "${VERIFY_S:-240}" nvcc-opt verify 1
  nvcc-opt review --accept 1 --reason "verified on the H200"
  cmake --build build -j 16 -- -v | grep -c 'nvcc-opt' | sed 's/^/objects recompiled: /'
  nvcc-opt explain src/stencil.cu
  for i in 1 2 3; do ./run.sh build | head -1; done
  python3 check.py build
} 2>&1 | tee "$OUT/e2e.log"
cd - >/dev/null || exit 1
fi

if want noise; then
step "benchmark_code noise"
noise=/tmp/noise
rm -rf "$noise" && cp -r examples/saxpy-stencil "$noise"
cmake -S "$noise" -B "$noise/build" -G Ninja -DCMAKE_CUDA_COMPILER_LAUNCHER=/tmp/bin/nvcc-opt >/dev/null
cmake --build "$noise/build" -j 16 >/dev/null
timeout "${NOISE_S:-420}" python3 benchmarks/benchmark_code_noise.py "$noise" \
  --trials "${TRIALS:-20}" --reps "${REPS:-400}" --size "${SIZE:-16777216}" --calls "${CALLS:-3}" ${PAIRS:+--pairs $PAIRS} --out "$OUT/benchmark_code_noise.json" 2>&1 | tail -30
fi
if want suite; then
  step "the kernel suite with the search policy"
  timeout -s INT -k 40 "${SUITE_S:-530}" python3 -m nvcc_opt.cli.bench suite --model "${SUITE_MODEL:-search}" \
    --out "$OUT/suite" --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 ${SUITE_ONLY:+--only $SUITE_ONLY} \
    ${SUITE_GPUS:+--gpus "$SUITE_GPUS"} --start-within "${SUITE_START_S:-$(( ${SUITE_S:-530} - 240 ))}" \
    2>&1 | tail -60
  # Only files at most 2 folders below $OUT come back: every run's traces go into one archive
  # (paths relative to the bench's work folder, as the report's "trace" fields name them), and
  # the work trees go, leaving $OUT/suite with the .json, the .md and traces.tar.gz.
  for work in "$OUT"/suite/work/*/; do
    [ -d "$work" ] || continue  # the bench stopped before it made one
    (cd "$work" && find . -path './*/run-*/state/traces/*.json' | sed 's|^\./||' | sort) >/tmp/traces.txt
    tar -czf "$OUT/suite/traces.tar.gz" -C "$work" -T /tmp/traces.txt
    echo "traces: $(wc -l </tmp/traces.txt) files in $OUT/suite/traces.tar.gz"
  done
  rm -rf "$OUT/suite/work"
fi
step done
