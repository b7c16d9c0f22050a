#!/usr/bin/env bash
# The kernel suite as a queue that outlives one device call. A call has at most 10 minutes, and
# gpu_session.sh's suite part must start its last kernel about 4 minutes before the end, so each
# call left minutes unused or cut a kernel short. The device machine keeps a process that started
# its own session (setsid) until the machine goes back, so:
#   start APP...   copies this tree to /tmp/q/repo, then in a new process session runs the GPU
#                  tests named in GPU_TESTS (if any), then `nvcc-opt bench suite --model search
#                  --only APP` for one app after the other, each report and its traces in /tmp/q/APP/
#   wait SECONDS   waits until the queue has ended or SECONDS have passed, then packs what finished
#   stop           no app starts after this; SIGINT to the bench in flight (it stops its runs, up to
#                  30 s, and writes the report of what finished); waits for the queue to end; packs
# Packing writes $OUT/queue.tar.gz (every app's .json, .md and traces.tar.gz, the GPU tests' log
# and the queue's log) and $OUT/queue.log. Call `wait` back to back (the machine stays warm 30 s
# after a call), `stop` in the last call, then `nvcc-opt bench merge` the reports.
# Wheels the machine lacks travel in .whl/ (benchmarks/README.md, "gpu_session.sh").
set -uo pipefail
Q=/tmp/q
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT" "$Q"

pack() {
  (cd "$Q" && find . -path ./repo -prune -o -path '*/work' -prune -o -type f \
    \( -name '*.json' -o -name '*.md' -o -name '*.tar.gz' -o -name '*.log' \) -print | sort) \
    >/tmp/q-files.txt
  tar -czf "$OUT/queue.tar.gz" -C "$Q" -T /tmp/q-files.txt
  cp "$Q/queue.log" "$OUT/queue.log" 2>/dev/null
  echo "packed $(wc -l </tmp/q-files.txt) files; finished apps: $(ls "$Q"/*/*.json 2>/dev/null | wc -l)"
  tail -5 "$Q/queue.log" 2>/dev/null
}

ended() { [ -e "$Q/ended" ]; }

# A machine that went back (more than 30 s idle) comes fresh: say so at once, not after waiting.
started_here() {
  [ -e "$Q/started" ] && return 0
  echo "no queue on this machine: it went back since the start; run start again with the apps left" >&2
  return 1
}

case "${1:-}" in
start)
  shift
  [ -e "$Q/started" ] && { echo "the queue was started already"; exit 1; }
  rm -rf "$Q/repo" && mkdir -p "$Q/repo"
  tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C "$Q/repo"
  cd "$Q/repo" || exit 1
  [ -n "${SKIP_PIP:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
  mkdir -p /tmp/bin
  printf '#!%s\nfrom nvcc_opt.entry import main\nmain()\n' "$(command -v python3)" >/tmp/bin/nvcc-opt
  chmod +x /tmp/bin/nvcc-opt
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nvcc --version | tail -2;
    cmake --version | head -1; python3 --version; } >"$Q/machine.log" 2>&1
  touch "$Q/started"
  # The runner: one bench per app, so each finished app's report is on disk at once.
  cat >"$Q/runner.sh" <<'EOF'
set -uo pipefail
Q=/tmp/q
cd "$Q/repo" || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 PATH="/tmp/bin:$PATH"
export NVCC_OPT_STORE=/tmp/state/store.db XDG_CACHE_HOME=/tmp/cache
if [ -n "${GPU_TESTS:-}" ]; then
  echo "== GPU tests ($(date +%T))"
  python3 -m pytest -q -p no:cacheprovider -m gpu $GPU_TESTS -rA 2>&1 | tail -40 >"$Q/gpu_tests.log"
  tail -3 "$Q/gpu_tests.log"
fi
for app in "$@"; do
  [ -e "$Q/stop" ] && { echo "stopped before $app"; break; }
  echo "== $app ($(date +%T))"
  # The runner was started with & so it ignores SIGINT, and so would the bench (Python keeps an
  # ignored SIGINT): the bench gets the default back, and its pid is written, before its exec.
  python3 -c 'import os, signal, sys
open(sys.argv[1], "w").write(str(os.getpid()))
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[2], sys.argv[2:])' "$Q/bench.pid" python3 -m nvcc_opt.cli.bench suite \
    --model search --out "$Q/$app" --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 --only "$app" \
    >"$Q/$app.out" 2>&1
  echo "   exit $? ($(date +%T)): $(grep -m1 '^| *'"$app" "$Q/$app"/*.md 2>/dev/null | cut -c1-160)"
  for work in "$Q/$app"/work/*/; do
    [ -d "$work" ] || continue
    (cd "$work" && find . -path './*/run-*/state/traces/*.json' | sed 's|^\./||' | sort) >"$Q/traces.txt"
    tar -czf "$Q/$app/traces.tar.gz" -C "$work" -T "$Q/traces.txt"
  done
  tail -30 "$Q/$app.out" >"$Q/$app/bench.log"
done
echo "== ended ($(date +%T))"
touch "$Q/ended"
EOF
  GPU_TESTS="${GPU_TESTS:-}" setsid nohup bash "$Q/runner.sh" "$@" >"$Q/queue.log" 2>&1 </dev/null &
  sleep 2
  echo "queue started: $*"
  ;;
wait)
  started_here || exit 1
  limit="${2:-560}"
  waited=0
  while ! ended && [ "$waited" -lt "$limit" ]; do sleep 5; waited=$((waited + 5)); done
  pack
  ;;
stop)
  started_here || exit 1
  touch "$Q/stop"
  if ! ended && [ -e "$Q/bench.pid" ]; then
    kill -INT "$(cat "$Q/bench.pid")" 2>/dev/null
    for _ in $(seq 1 24); do ended && break; sleep 5; done
  fi
  pack
  ;;
*)
  echo "usage: gpu_queue.sh start APP... | wait SECONDS | stop" >&2
  exit 2
  ;;
esac
