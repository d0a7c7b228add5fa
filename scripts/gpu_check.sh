#!/usr/bin/env bash
# GPU checks for verify, run on a machine with CUDA (never part of CI, which has no GPU).
#
#   bash scripts/gpu_check.sh [OUTDIR]
#
# 1. the verify tests with `device = "auto"`, which picks CUDA there: every case of tests/cases,
#    the module shapes, the LSP walkthrough, and the `gpu`-marked tests;
# 2. benchmarks/verify_latency.py on cuda and on cpu, same machine, same run.
# Expects torch with CUDA in python3; the project's other dependencies on PYTHONPATH or installed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
    torch.cuda.get_device_name(0))' | tee -a "$out/gpu.txt"
rc=0
python3 -m pytest -q -rs -p no:cacheprovider --junitxml="$out/junit.xml" \
    tests/test_verify.py tests/test_lsp_verify.py tests/test_harness.py 2>&1 \
    | tee "$out/pytest.log" || rc=1
for device in cuda cpu; do
    python3 benchmarks/verify_latency.py --runs 10 --device "$device" 2>&1 \
        | grep -v -i "numpy\|_conversion_method" | tee "$out/verify_latency_$device.txt" || rc=1
done
exit $rc
