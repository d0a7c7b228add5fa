#!/usr/bin/env bash
# The detector's checks on a CUDA machine, from a fresh checkout with torch (CUDA) installed:
#   1. benchmarks/detect_overhead.py --device cuda: ResNet-50 (batch 128) and two GPT-2 blocks
#      (batch 16 x 1024 tokens) in fp32, bf16 and fp16 (autocast, GradScaler), then the four
#      CPU models at their CPU batches; each beside plain and anomaly mode, and the cheaper mode
#      (one step in 20)                  -> $OUT/detect_cuda_realistic.json, detect_cuda_small.json
#   2. no device synchronisation per op: under torch.cuda.set_sync_debug_mode("error"), clean
#      training steps (fp32, bf16 autocast, the cheaper mode's steps) and one with an in-place
#      bug run under the detector; the only RuntimeError must be the in-place one
#                                                            -> $OUT/sync_check.json, .txt
#   3. pytest -q tests/test_detect.py (DETECT_TESTS_K=cuda: its CUDA tests only)
#                                                            -> $OUT/pytest_detect.txt
# Every step runs; the exit status is 1 when any failed. PYTHON picks the interpreter.
#     OUT=/tmp/out bash benchmarks/gpu_detect_check.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
PY=${PYTHON:-python}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the checkout, even if pip cannot install
failed=()

if ! "$PY" -c "import inplace_lsp, pytest" 2>/dev/null; then
    # The test extra pins torch: the constraint keeps the CUDA build that is installed (and
    # when the pin disagrees with it, only the project and pytest are installed).
    "$PY" -c "import torch; print('torch==' + torch.__version__)" >"$OUT/constraints.txt"
    "$PY" -m pip install -q -e '.[test]' -c "$OUT/constraints.txt" \
        || "$PY" -m pip install -q -e . pytest -c "$OUT/constraints.txt" \
        || echo "gpu_detect_check: pip install failed; running from the checkout"
fi

"$PY" benchmarks/detect_overhead.py --device cuda --models resnet50 gpt2 \
    --precision fp32 bf16 fp16 --every 20 --repeat 6 --json "$OUT/detect_cuda_realistic.json" \
    2>&1 | tee "$OUT/detect_cuda_realistic.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(detect_overhead_realistic)
"$PY" benchmarks/detect_overhead.py --device cuda --models resnet18 gpt lstm mlp \
    --every 20 --repeat 10 --json "$OUT/detect_cuda_small.json" \
    2>&1 | tee "$OUT/detect_cuda_small.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(detect_overhead_small)

# From a file, not stdin: the detector quotes the source of the line that wrote.
cat >"$OUT/sync_check.py" <<'EOF'
import contextlib
import json
import sys

import torch
from torch import nn

import inplace_lsp
from inplace_lsp.integrations import Steps

device = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a dry run of the logic
SYNC = "called a synchronizing CUDA operation"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64, device=device), nn.Linear(64, 1, device=device))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(32, 64, device=device)


def clean():
    model[1](torch.sigmoid(model[0](x))).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()


def clean_bf16():
    with torch.autocast(device, dtype=torch.bfloat16):
        loss = model[1](torch.sigmoid(model[0](x))).float().pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def cheaper_mode():  # as InplaceDetect(every=2) runs steps: on, on, off, on, off
    steps = Steps(enabled=True, silent=True, retention=False, report=None, command="", every=2)
    for _ in range(5):
        steps.enter()
        try:
            clean_bf16()
        finally:
            steps.leave()


def buggy():
    h = torch.sigmoid(model[0](x))
    h.mul_(2)  # sigmoid saved its output for backward: backward must fail
    model[1](h).sum().backward()


def control():
    x.sum().item()  # reads a value back: must trip the sync debug mode


def outcome(fn, detect):
    """"ok", or the text of the RuntimeError fn raised with sync debugging set to "error"."""
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    try:
        with inplace_lsp.detect() if detect else contextlib.nullcontext():
            fn()
        return "ok"
    except RuntimeError as exc:
        return str(exc)
    finally:
        if device == "cuda":
            torch.cuda.set_sync_debug_mode("default")
        optimizer.zero_grad()


for fn in (clean, clean_bf16, buggy):  # warm-up outside the debug mode: context, handles, allocator
    for detect in (False, True):
        with contextlib.suppress(RuntimeError):
            with inplace_lsp.detect() if detect else contextlib.nullcontext():
                fn()
        optimizer.zero_grad()

found = {
    "device": torch.cuda.get_device_name() if device == "cuda" else "cpu (dry run)",
    "control: .item()": outcome(control, False),
    "clean step, plain": outcome(clean, False),
    "clean step, detect()": outcome(clean, True),
    "clean bf16 step, plain": outcome(clean_bf16, False),
    "clean bf16 step, detect()": outcome(clean_bf16, True),
    "cheaper mode, 5 steps": outcome(cheaper_mode, False),
    "in-place bug, detect()": outcome(buggy, True),
}
bug = found["in-place bug, detect()"]
checks = {
    "the debug mode catches a sync (control)": device != "cuda" or SYNC in found["control: .item()"],
    "a plain step does not sync": found["clean step, plain"] == "ok",
    "a step under detect() does not sync": found["clean step, detect()"] == "ok",
    "a plain bf16 step does not sync": found["clean bf16 step, plain"] == "ok",
    "a bf16 step under detect() does not sync": found["clean bf16 step, detect()"] == "ok",
    "the cheaper mode's steps do not sync": found["cheaper mode, 5 steps"] == "ok",
    "the bug raises the in-place error": "modified by an inplace operation" in bug,
    "the detector names the write": "inplace-lsp detect:" in bug and "h.mul_(2)" in bug,
    "no sync error with the bug": SYNC not in bug,
}
for name, ok in checks.items():
    print(f"{'ok    ' if ok else 'FAILED'} {name}")
print("\n".join(f"--- {k}:\n{v}" for k, v in found.items()))
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump({"outcomes": found, "checks": checks, "ok": all(checks.values())}, f, indent=1)
sys.exit(0 if all(checks.values()) else 1)
EOF
"$PY" "$OUT/sync_check.py" "$OUT/sync_check.json" 2>&1 | tee "$OUT/sync_check.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(sync_check)

# DETECT_TESTS_K: a pytest -k expression, to run some of them (a short device lease: cuda).
"$PY" -m pytest -q tests/test_detect.py ${DETECT_TESTS_K:+-k "$DETECT_TESTS_K"} 2>&1 \
    | tee "$OUT/pytest_detect.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(pytest)

if [ "${#failed[@]}" -gt 0 ]; then
    echo "gpu_detect_check: FAILED: ${failed[*]} (outputs in $OUT)"
    exit 1
fi
echo "gpu_detect_check: all passed (outputs in $OUT)"
