#!/usr/bin/env bash
# The parts of gpu_batch.sh, run in the background from its copy of the tree (/tmp/b/repo).
set -uo pipefail
B=/tmp/b
R="$B/res"
cd "$B/repo" || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 PATH="/tmp/bin:$PATH" XDG_CACHE_HOME=/tmp/cache
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
stopped() { [ -e "$B/stop" ]; }
# A part runs in its own process group, so `stop` can end it with everything it started.
part() {
  local name="$1"; shift
  stopped && { echo "stopped before $name"; return; }
  step "$name"
  # every line stamped with the time since the part began, and every process nvcc-opt starts
  # logged with its duration (NVCC_OPT_LOG), so a part stopped mid-way still tells where its time
  # went
  setsid env NVCC_OPT_LOG="$R/$name-processes.log" bash -c "set -o pipefail; ($*) 2>&1 | while IFS= read -r l; do printf '%5ds %s\n' \$SECONDS \"\$l\"; done" >"$R/$name.log" 2>&1 &
  local pid=$!
  echo "$pid" >>"$B/part.pids"
  wait "$pid"
  echo "   $name: exit $? ($(date +%T))"
  tail -4 "$R/$name.log"
}
example() {  # a fresh copy of an app (default: the example), configured and built through the
  # launcher (store in it); a suite app is copied with the suite's common/ beside it
  local app="${2:-examples/saxpy-stencil}"
  rm -rf "$1" && mkdir -p "$(dirname "$1")" && cp -r "$app" "$1"
  [ -d "$(dirname "$app")/common" ] && { rm -rf "$(dirname "$1")/common"; cp -r "$(dirname "$app")/common" "$(dirname "$1")/common"; }
  NVCC_OPT_STORE="$1/store.db" cmake -S "$1" -B "$1/build" -G Ninja \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=/tmp/bin/nvcc-opt -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  NVCC_OPT_STORE="$1/store.db" cmake --build "$1/build" -j 16 >/dev/null
}

run_part() {
  local p="$1"
  case "$p" in
  pool)
    example /tmp/pool/app "${POOL_APP:-examples/saxpy-stencil}"
    part pool "NVCC_OPT_STORE=/tmp/pool/app/store.db python3 benchmarks/pool_rollout.py --jobs toolbox \
      --root /tmp/pool/app --region /tmp/pool/app/${POOL_REGION:-src/stencil.cu:smooth_kernel} \
      --tool benchmark_code --calls ${POOL_K:-12} --rounds ${POOL_ROUNDS:-1} \
      --out $R/pool_rollout-gpu-benchmark_code.json"
    ;;
  example)
    example /tmp/ex
    part example "cd /tmp/ex && NVCC_OPT_STORE=/tmp/ex/store.db nvcc-opt optimize --model \"${EXAMPLE_MODEL:-search}\" \
      --json ${EXAMPLE_REGIONS:-} >$R/example-optimize.json; rc=\$?; \
      NVCC_OPT_STORE=/tmp/ex/store.db nvcc-opt review --list >$R/example-review.txt 2>&1; \
      cp -r /tmp/ex/traces $R/example-traces 2>/dev/null; exit \$rc"
    ;;
  lulesh)
    part lulesh "python3 -m integration.lulesh table .lulesh --model \"${LULESH_MODEL:-search}\" \
      --size ${LULESH_SIZE:-120} --iters ${LULESH_ITERS:-400} --pairs ${LULESH_PAIRS:-5} ${LULESH_ARGS:-} \
      --work /tmp/lulesh --out $R/lulesh-table; \
      cp /tmp/lulesh/store.db $R/lulesh-store.db 2>/dev/null; \
      cp -r /tmp/lulesh/traces $R/lulesh-traces 2>/dev/null; true"
    ;;
  lulesh-opt)  # what the search policy tries on LULESH's kernel, its trace kept even if stopped
    echo /tmp/lulesh-opt/traces >>"$B/keep"
    part lulesh-opt "python3 -m integration.lulesh prepare .lulesh --work /tmp/lulesh-opt \
      --size ${LULESH_SIZE:-120} --iters ${LULESH_ITERS:-100} >$R/lulesh-opt-prepare.log 2>&1 || exit 1; \
      cd /tmp/lulesh-opt && NVCC_OPT_STORE=/tmp/lulesh-opt/store.db nvcc-opt optimize --root /tmp/lulesh-opt \
      --model \"search?budget_s=${LULESH_BUDGET:-240}${LULESH_SEARCH:+&$LULESH_SEARCH}\" --json \
      src/lulesh.cu:CalcKinematicsAndMonotonicQGradient_kernel >$R/lulesh-opt-output.txt"
    ;;
  gputests)  # the GPU tests named in GPU_TESTS (default: the channel, the sanitizer, the rewrites
    # whose bit-for-bit GPU tests have not run yet: vectors, padded tiles, reductions in loops)
    part gputests "python3 -m pytest -q -p no:cacheprovider -m gpu ${GPU_TESTS:-tests/test_runtime_channel.py tests/test_verify_sanitizer_gpu.py tests/test_search_vector_strided.py tests/test_search_bank_padding.py tests/test_search_shuffle_forms.py} \
      -o junit_family=xunit2 --junitxml=$R/gputests.xml"
    ;;
  redteam)  # the run-time red team through the whole final verification, WORKERS at once
    part redteam "NVCC_OPT_REDTEAM_REPORT=$R/redteam.json python3 -m pytest -q -p no:cacheprovider -m gpu \
      -n ${WORKERS:-8} ${REDTEAM_K:+-k \"$REDTEAM_K\"} tests/test_redteam_gpu.py -rfE -o junit_family=xunit2 --junitxml=$R/redteam.xml; rc=\$?; \
      python3 -c 'import glob, json, os, sys
rows = [r for f in sorted(glob.glob(sys.argv[1] + \".gw*\")) for r in json.load(open(f))]
json.dump(sorted(rows, key=lambda r: r[\"file\"]), open(sys.argv[1], \"w\"), indent=1)
[os.remove(f) for f in glob.glob(sys.argv[1] + \".gw*\")]' $R/redteam.json; exit \$rc"
    ;;
  rajaperf-build)  # issue 18: a carried RAJAPerf checkout (.rajaperf, scripts/rajaperf_from_mirrors.sh)
    # prepared (CUDA 13 fixes, tags, settings), configured and built through the launcher
    rm -rf /tmp/rp && cp -r .rajaperf /tmp/rp
    part rajaperf-build "python3 -m integration.rajaperf prepare /tmp/rp --launcher /tmp/bin/nvcc-opt; \
      rc=\$?; python3 -m integration.rajaperf status /tmp/rp >$R/rajaperf-status.txt 2>&1; exit \$rc"
    touch "$B/rajaperf-built"
    ;;
  rajaperf)  # the paper's protocol on RAJAPERF_ONLY (default: every tagged kernel), resumable
    while [ -e /tmp/rp ] && [ ! -e "$B/rajaperf-built" ] && ! stopped; do sleep 5; done  # a build beside
    [ -x /tmp/rp/build-nvcc-opt/bin/raja-perf.exe ] || { echo "rajaperf: not built"; return; }
    echo /tmp/rp-out/runs >>"$B/keep"
    # runs of earlier sessions (a results folder's rp-out-runs) are resumed, not repeated
    [ -n "${RAJAPERF_RUNS_FROM:-}" ] && mkdir -p /tmp/rp-out && cp -rn "$RAJAPERF_RUNS_FROM" /tmp/rp-out/runs
    only=""; for k in ${RAJAPERF_ONLY:-}; do only="$only --only $k"; done
    part rajaperf "python3 -m integration.rajaperf protocol /tmp/rp --model \"${RAJAPERF_MODEL:-search?budget_s=120}\" \
      --runs ${RAJAPERF_RUNS:-1} --timeout ${RAJAPERF_TIMEOUT:-600} $only --out /tmp/rp-out; rc=\$?; \
      cp /tmp/rp-out/rajaperf-* $R/ 2>/dev/null; exit \$rc"
    ;;
  train)  # issue 16: benchmarks/train_session.sh with TRAIN_PARTS (default "hec collect") and its
    # own settings (SET_FROM, SET_SRC, SEARCH_OPTS, COLLECT_S, ...), results in res/train
    part train "GPU_ENV_READY=1 OUT=$R/train PARTS=\"${TRAIN_PARTS:-hec collect}\" bash benchmarks/train_session.sh"
    ;;
  *) echo "unknown part $p" ;;
  esac
}
# a part named NAME& runs in the background beside the parts after it; the batch ends when all have
for p in ${PARTS:-pool example lulesh}; do
  case "$p" in
  *\&) run_part "${p%&}" & ;;
  *) run_part "$p" ;;
  esac
done
wait
step ended
touch "$B/ended"
