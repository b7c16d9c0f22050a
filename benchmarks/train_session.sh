#!/usr/bin/env bash
# The training pipeline of issue 16 on the H200, in parts across device calls (each call has at
# most 10 minutes; results land in $OUT, then benchmarks/results/train-<date>/):
#   hec      HeCBench (a trimmed copy of the user's checkout carried in .hec/) -> problem set
#            /tmp/set: `nvcc-opt train problems --from hecbench` with the build + run check
#            (HEC_ONLY: a comma-separated subset of benchmarks), then `train baseline`.
#   collect  teacher traces of the search policy over the train split (`train collect`), and the
#            teacher's eval on the eval split (`train eval --model search`).
#   sft      the SmolLM2 GGUF (carried in three parts in .model/p1..p3 across calls) -> student
#            checkpoint (`train student`), `train sft` on collect's sft.jsonl, then `train eval` of
#            the untrained SmolLM2 and of the student on the eval split.
# A part's inputs come from the earlier parts' files in /tmp when the machine stayed warm, else
# from the tarballs carried back in .train/ (set.tgz, collect.tgz).
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
source benchmarks/gpu_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site training/ >/dev/null 2>&1 \
  || export PYTHONPATH="$PWD/training:$PYTHONPATH"
export PYTHONPATH="$PWD/training:$PYTHONPATH" XDG_CACHE_HOME=/tmp/cache
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
parts="${PARTS:-hec}"
want() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
for p in p1 p2 p3; do [ -f ".model/$p/part" ] && mkdir -p /tmp/model && cp ".model/$p/part" "/tmp/model/$p"; done
ls -la /tmp/model 2>/dev/null
[ -d /tmp/set ] || { [ -f .train/set.tgz ] && mkdir -p /tmp/set && tar -xzf .train/set.tgz -C /tmp/set; }
[ -d /tmp/collect ] || { [ -f .train/collect.tgz ] && mkdir -p /tmp/collect && tar -xzf .train/collect.tgz -C /tmp/collect; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -2; python3 --version;
  python3 -c "import torch, transformers, trl, datasets; print(torch.__version__, transformers.__version__, trl.__version__, datasets.__version__)"; } >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

if want hec; then
  step "train problems --from hecbench"
  only=(); [ -n "${HEC_ONLY:-}" ] && only=(--only "$HEC_ONLY")
  timeout "${HEC_S:-300}" nvcc-opt train problems /tmp/set --from hecbench .hec --check run --jobs 16 \
    --cmake-arg -DCMAKE_CUDA_ARCHITECTURES=90 --exclude-from benchmarks/suite "${only[@]}" 2>&1 | tail -60 | tee "$OUT/problems.log"
  step "train baseline"
  nvcc-opt train baseline /tmp/set --runs 3 --within "${BASE_S:-120}" 2>&1 | tail -30 | tee "$OUT/baseline.log"
  tar -czf "$OUT/set.tgz" -C /tmp/set --exclude=.check --exclude=.baseline .
fi
if want collect; then
  step "train collect --model search"
  nvcc-opt train collect /tmp/set --model "search?budget_s=${SEARCH_S:-60}" --out /tmp/collect --runs 1 \
    --within "${COLLECT_S:-240}" 2>&1 | tail -40 | tee "$OUT/collect.log"
  step "train eval --model search"
  nvcc-opt train eval --model "search?budget_s=${SEARCH_S:-60}" --problems /tmp/set --split eval \
    --out /tmp/eval-search --within "${EVAL_S:-150}" 2>&1 | tail -30 | tee "$OUT/eval-search.log"
  tar -czf "$OUT/collect.tgz" -C /tmp collect eval-search
fi
if want sft; then
  step "student from the SmolLM2 GGUF"
  cat /tmp/model/p1 /tmp/model/p2 /tmp/model/p3 >/tmp/smollm2.gguf && sha256sum /tmp/smollm2.gguf | cut -c1-16
  nvcc-opt train student /tmp/student --from /tmp/smollm2.gguf 2>&1 | tail -5 | tee "$OUT/student.log"
  step "train sft"
  nvcc-opt train sft /tmp/collect/sft.jsonl --student /tmp/student --out /tmp/sft ${SFT_ARGS:-} 2>&1 | tail -20 | tee "$OUT/sft.log"
  cp /tmp/sft/train_log.json "$OUT/" 2>/dev/null
  for m in student sft; do
    step "train eval --model hf:/tmp/$m"
    nvcc-opt train eval --model "hf:/tmp/$m?max_new_tokens=${NEW_TOKENS:-512}" --problems /tmp/set --split eval \
      --out /tmp/eval-$m --turns "${EVAL_TURNS:-8}" --within "${EVAL_S:-150}" 2>&1 | tail -20 | tee "$OUT/eval-$m.log"
  done
  tar -czf "$OUT/evals.tgz" -C /tmp eval-student eval-sft
fi
