#!/usr/bin/env bash
# The verification against reward hacking on the H200, in as few device calls as the budget
# allows (benchmarks/README.md, "Red team on a GPU"). PARTS picks what runs:
#   redteam   tests/test_redteam_gpu.py on WORKERS pytest-xdist workers (default 6), each
#             candidate's verdict in $OUT/redteam.json (the workers' files joined); REDTEAM_K
#             narrows it (-k), REDTEAM_S bounds it (default 520 s)
#   smoke     benchmarks/verify_smoke.py on two honest rewrites and a state cheat
#   overhead  benchmarks/verify_overhead.py (target: the newer checks < 25% of a verification)
# Wheels the machine lacks travel in .whl/; gpu_env.sh installs them (as for gpu_session.sh).
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
source benchmarks/gpu_env.sh
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nvcc --version | tail -2;
  python3 --version; nproc; } >"$OUT/machine.txt" 2>&1
parts="${PARTS:-redteam}"
want() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
if want redteam; then
  step "red team, ${WORKERS:-6} workers ${REDTEAM_K:+(-k $REDTEAM_K)}"
  NVCC_OPT_REDTEAM_REPORT="$OUT/redteam.json" timeout -s INT -k 20 "${REDTEAM_S:-520}" \
    python3 -m pytest -q -p no:cacheprovider -m gpu -n "${WORKERS:-6}" tests/test_redteam_gpu.py \
    ${REDTEAM_K:+-k "$REDTEAM_K"} -rfE 2>&1 | tail -60 | tee "$OUT/redteam.log"
  # one report: only a few files come back from a device call
  python3 -c 'import glob, json, os, sys
rows = [r for f in sorted(glob.glob(sys.argv[1] + ".gw*")) for r in json.load(open(f))]
json.dump(sorted(rows, key=lambda r: r["file"]), open(sys.argv[1], "w"), indent=1)
[os.remove(f) for f in glob.glob(sys.argv[1] + ".gw*")]' "$OUT/redteam.json"
fi
if want smoke; then
  step "verify_smoke"
  timeout "${SMOKE_S:-240}" python3 benchmarks/verify_smoke.py tests/redteam/honest__fused_pair.cu \
    tests/redteam/classes/honest__constexpr_weights.cu tests/redteam/classes/state__marker_in_tmp.cu \
    2>&1 | tail -30 | tee "$OUT/smoke.log"
fi
if want overhead; then
  step "verify_overhead"
  timeout "${OVERHEAD_S:-240}" python3 benchmarks/verify_overhead.py --out "$OUT/overhead.json" \
    2>&1 | tail -30 | tee "$OUT/overhead.log"
fi
step done
