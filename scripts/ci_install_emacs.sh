#!/usr/bin/env bash
# Installs the Emacs the Emacs end-to-end test (tests/test_editor_emacs.py) runs, idempotently:
# Debian 12's `emacs-nox` (28.2) and `elpa-eglot` (1.9; eglot is built in only from Emacs 29).
#
#   bash scripts/ci_install_emacs.sh     # as root on Debian 12
set -euo pipefail

PACKAGES=(emacs-nox elpa-eglot)

step() { printf '\n==> %s\n' "$*"; }

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

step "apt ${PACKAGES[*]} (Debian 12: Emacs 28.2, eglot 1.9)"
missing=()
for package in "${PACKAGES[@]}"; do
    installed "$package" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    # Update the package lists only when the install cannot find the packages without it.
    if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
fi
emacs --version | head -1
echo "    $(command -v emacs)"
echo "    elpa-eglot $(dpkg-query -W -f='${Version}' elpa-eglot)"
