#!/usr/bin/env bash
# GPU checks of the bench suites (issue 5), in under 5 minutes on one H100/H200-class GPU.
#
#   OUT=/some/folder bash benchmarks/gpu_check.sh
#
# Needs python with a CUDA build of torch plus lightspeed's dependencies (numpy, click, rich,
# msgspec, matplotlib); lightspeed itself is taken from ./src. Writes to $OUT (default out/gpu-check):
#   environment.txt   nvidia-smi, torch/CUDA/NCCL versions
#   pytest_gpu.txt    the @pytest.mark.gpu tests of tests/bench
#   gemm_bf16.json    full bf16 shape sweep (MAMF method: randn, warm-up, L2 flush, 2mnk, median)
#   gemm_other.json   quick sweep of every dtype the GPU supports (fp64, fp32, tf32, bf16, fp16, fp8)
#   membw.json copy.json launch.json collectives.json (collectives only with 2+ GPUs)
#   summary.txt       best bf16 shape as a fraction of the catalog's dense peak (target >= 75%)
set -uo pipefail
usage() {
    echo "usage: [OUT=FOLDER] [PYTHON=PY] bash benchmarks/gpu_check.sh"
    echo "GPU checks of the bench suites on one CUDA machine; results in \$OUT (default out/gpu-check)."
}
case "${1:-}" in
    "") ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$1'; fix: run it without arguments (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-check}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export LIGHTSPEED_HOME="$OUT/home"
LS=("$PY" -m lightspeed)

{
    nvidia-smi || echo "nvidia-smi not available"
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None, \
'gpus', torch.cuda.device_count())"
} > "$OUT/environment.txt" 2>&1

if ! "$PY" -c "import torch, numpy, click, rich, msgspec, matplotlib, lightspeed" 2>> "$OUT/environment.txt"; then
    echo "gpu_check.sh: $PY lacks torch or one of lightspeed's dependencies (see $OUT/environment.txt); fix: set PYTHON to an interpreter with a CUDA build of torch and numpy, click, rich, msgspec, matplotlib" | tee "$OUT/summary.txt" >&2
    exit 2
fi

run() { # name, seconds, command...
    local name=$1 limit=$2
    shift 2
    timeout "$limit" "$@" > "$OUT/$name.json" 2> "$OUT/$name.stderr.txt"
    echo "$name: exit $?" >> "$OUT/exit_codes.txt"
}

timeout 120 "$PY" -m pytest -q -rs -p no:cacheprovider tests/bench/test_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest_gpu: exit $?" >> "$OUT/exit_codes.txt"
run gemm_bf16 90 "${LS[@]}" bench gemm --device cuda --dtype bf16 --json
run gemm_other 90 "${LS[@]}" bench gemm --device cuda --dtype all --quick --json # every dtype it supports
run membw 30 "${LS[@]}" bench membw --device cuda --quick --json
run copy 30 "${LS[@]}" bench copy --device cuda --quick --json
run launch 30 "${LS[@]}" bench launch --device cuda --quick --json
NUM_GPUS=$("$PY" -c "import torch; print(torch.cuda.device_count())")
if [ "$NUM_GPUS" -ge 2 ]; then
    run collectives 60 "${LS[@]}" bench collectives --device cuda --quick --num-processes "$NUM_GPUS" --json
fi

"$PY" - "$OUT" > "$OUT/summary.txt" 2>&1 <<'EOF'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
def load(name):
    path = out / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return []
gemm = [r for r in load("gemm_bf16") if r["correct"]]
if gemm:
    best = max(gemm, key=lambda r: r["value"])
    d = best["details"]
    fraction = best["fraction_of_sol"]
    print(f"best bf16 {d['m']}x{d['n']}x{d['k']}: {best['value'] / 1e12:.1f} TFLOP/s "
          f"of {best['sol'] / 1e12 if best['sol'] else float('nan'):.1f} dense peak "
          f"({'n/a' if fraction is None else f'{fraction:.1%}'}; target >= 75%) [{best['sol_note']}]")
for name in ("gemm_other", "membw", "copy", "launch", "collectives"):
    for r in load(name):
        share = "" if r["fraction_of_sol"] is None else f" ({r['fraction_of_sol']:.1%} of SOL)"
        print(f"{name}: {r['name']} {r['dtype'] or ''} size={r['size']} value={r['value']:.4g} {r['unit']}"
              f"{share} correct={r['correct']}")
EOF
cat "$OUT/summary.txt"
