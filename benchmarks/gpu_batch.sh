#!/usr/bin/env bash
# GPU measurements as one background batch that outlives a device call (as gpu_queue.sh does for
# the suite): the machine keeps a process that started its own session (setsid) until it goes
# back, so `start` runs the parts one after the other in the background and each call only waits
# and collects. Parts (PARTS, in order):
#   pool     issue 17: benchmarks/pool_rollout.py, K=POOL_K (12) benchmark_code calls on
#            POOL_APP's region POOL_REGION (default: the example's src/stencil.cu:smooth_kernel;
#            a suite app such as benchmarks/suite/jacobi_2d with src/kernel.cu:jacobi_2d runs
#            shorter), serial (trl's way) vs the local pool, POOL_ROUNDS (1);
#            about 10-11 minutes on the H200 (each call is 20 timed runs of the example, the
#            warm-up one call per Toolbox): give it a device call of its own;
#   example  issue 19: `nvcc-opt optimize --model search` on the example's regions (EXAMPLE_REGIONS)
#            through its real build, with the verified rewrites' explanations;
#   lulesh-opt  `integration.lulesh prepare` (LULESH_SIZE, LULESH_ITERS: 100) and `nvcc-opt optimize
#            --model search?budget_s=LULESH_BUDGET` (240) on its kernel: what the search tries,
#            its trace packed by every call even when the part is still running;
#   gputests  `pytest -m gpu` on GPU_TESTS (default: tests/test_runtime_channel.py,
#            tests/test_verify_sanitizer_gpu.py, tests/test_search_vector_strided.py,
#            tests/test_search_bank_padding.py and tests/test_search_shuffle_forms.py), with a
#            JUnit report;
#   redteam  tests/test_redteam_gpu.py on WORKERS (8) pytest-xdist workers, every verdict in
#            redteam.json (as gpu_verify.sh's); REDTEAM_K: a pytest -k expression (a subset);
#   rajaperf-build  issue 18: .rajaperf (a carried checkout: scripts/rajaperf_from_mirrors.sh)
#            copied, `integration.rajaperf prepare`d and built through the launcher;
#   rajaperf `integration.rajaperf protocol` on it: RAJAPERF_ONLY (kernels; default all),
#            RAJAPERF_MODEL (search?budget_s=120), RAJAPERF_RUNS (1), RAJAPERF_TIMEOUT (600 s);
#            finished runs kept even when the part is stopped (rp-out-runs in the batch);
#            RAJAPERF_RUNS_FROM (a carried folder of such runs) resumes an earlier session's;
#   train    issue 16: benchmarks/train_session.sh (TRAIN_PARTS: its PARTS, default "hec collect",
#            with its settings) into res/train;
#   lulesh   issue 18/19: `python -m integration.lulesh table` on .lulesh (a carried copy of the
#            user's LULESH 2.0.2-dev checkout) with LULESH_MODEL (search), LULESH_SIZE (120),
#            LULESH_ITERS (400), LULESH_PAIRS (5), LULESH_ARGS (more table options,
#            e.g. --force-accept).
# A part written NAME& runs in the background beside the parts after it (e.g. "rajaperf-build& redteam
# rajaperf": the build's cores overlap the red team's GPU time); the batch ends when all have.
# Usage (from the repository root, .whl and the data folders carried):
#   PARTS="pool example" bash benchmarks/gpu_batch.sh start && bash benchmarks/gpu_batch.sh wait 540
#   bash benchmarks/gpu_batch.sh wait 560          # back to back, within 30 s of the last call
#   bash benchmarks/gpu_batch.sh stop              # the last call: ends the part in flight
# Once a batch has ended, `start` may begin another on the same warm machine (its results add to
# /tmp/b/res), with the tree the new call carried.
# Every call packs what finished (/tmp/b/res: logs, JSON, Markdown) into $OUT/batch.tar.gz.
set -uo pipefail
B=/tmp/b
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT" "$B/res"

pack() {
  # folders a part asked to keep even when it is stopped (its traces, saved after every step)
  [ -f "$B/keep" ] && while read -r d; do k="$B/res/$(basename "$(dirname "$d")")-$(basename "$d")"; [ -d "$d" ] && rm -rf "$k" && cp -r "$d" "$k"; done <"$B/keep"
  tar -czf "$OUT/batch.tar.gz" -C "$B" res
  cp "$B/batch.log" "$OUT/batch.log" 2>/dev/null
  echo "packed: $(cd "$B/res" && ls | tr '\n' ' ')"
  tail -25 "$B/batch.log" 2>/dev/null
}
ended() { [ -e "$B/ended" ]; }
# data a later call carried for a running part (the SmolLM2 GGUF travels as .model/a and .model/b
# in two calls, 64 MiB each at most): staged where the part waits for it (/tmp/model/a, b)
stage() {
  for p in a b; do
    [ -f ".model/$p/part" ] && [ ! -f "/tmp/model/$p" ] && mkdir -p /tmp/model &&
      cp ".model/$p/part" "/tmp/model/.$p" && mv "/tmp/model/.$p" "/tmp/model/$p" && echo "staged .model/$p"
  done
  return 0
}
started_here() {
  [ -e "$B/started" ] && return 0
  echo "no batch on this machine: it went back since the start; start again with the parts left" >&2
  return 1
}

case "${1:-}" in
start)
  # a batch that ended may be followed by another on the same warm machine (newer tree, parts)
  [ -e "$B/started" ] && ! ended && { echo "a batch is running"; exit 1; }
  rm -f "$B/started" "$B/ended" "$B/stop" "$B/part.pids" "$B/rajaperf-built"
  rm -rf "$B/repo" && mkdir -p "$B/repo"
  tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C "$B/repo"
  cd "$B/repo" || exit 1
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
  mkdir -p /tmp/bin
  printf '#!%s\nfrom nvcc_opt.entry import main\nmain()\n' "$(command -v python3)" >/tmp/bin/nvcc-opt
  chmod +x /tmp/bin/nvcc-opt
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nvcc --version | tail -2
    cmake --version | head -1; python3 --version; nproc; command -v ncu nsys; } >"$B/res/machine.txt" 2>&1
  touch "$B/started"
  stage
  PARTS="${PARTS:-pool example lulesh}" setsid nohup bash "$B/repo/benchmarks/gpu_batch_parts.sh" \
    >"$B/batch.log" 2>&1 </dev/null &
  sleep 2
  echo "batch started: ${PARTS:-pool example lulesh}"
  ;;
wait)
  started_here || exit 1
  stage
  limit="${2:-540}"
  waited=0
  while ! ended && [ "$waited" -lt "$limit" ]; do sleep 5; waited=$((waited + 5)); done
  pack
  ;;
stop)
  started_here || exit 1
  touch "$B/stop"
  if ! ended && [ -e "$B/part.pids" ]; then
    while read -r pid; do kill -INT -- "-$pid" 2>/dev/null || kill -INT "$pid" 2>/dev/null; done <"$B/part.pids"
    for _ in $(seq 1 12); do ended && break; sleep 5; done
  fi
  pack
  ;;
*)
  echo "usage: gpu_batch.sh start | wait SECONDS | stop  (PARTS=\"pool example lulesh\")" >&2
  exit 2
  ;;
esac
