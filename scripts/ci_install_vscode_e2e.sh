#!/usr/bin/env bash
# Installs what the VS Code end-to-end test (tests/test_editor_vscode.py) needs, idempotently:
# Chromium and build tools from apt, code-server from npm into .vscode-e2e/cs, the e2e test's
# node modules, and the extension with the server bundled (scripts/bundle_server.py), packaged
# for this platform to vscode-client/inplace-lsp-linux-x64-<version>.vsix.
#
#   bash scripts/ci_install_vscode_e2e.sh [PYTHON]   # from anywhere; as root on Debian 12, node 20
#
# PYTHON (default .ci/venv/bin/python, else python3) builds the wheel that is bundled; it needs
# pip, nothing else.
#
# Everything it writes outside apt stays in git-ignored folders (.vscode-e2e/, node_modules/,
# dist/, *.vsix). Prints the time of each step.
set -euo pipefail
cd "$(dirname "$0")/.."

CS_VERSION=4.100.3       # the newest code-server whose engines.node is 20 (VS Code 1.100.3)
RG_PKG_VERSION=1.15.11   # the @vscode/ripgrep that code-server 4.100.3 pins
RG_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz   # what its postinstall fetches
E2E=.vscode-e2e
CS_DIR=$E2E/cs

start=$SECONDS
lap=$SECONDS
step() { printf '\n==> %s\n' "$*"; }
took() {
    printf '    %s: %ss\n' "$1" "$((SECONDS - lap))"
    lap=$SECONDS
}

step "system packages (chromium, ripgrep, headers for code-server's native modules)"
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
[ -e /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
command -v make >/dev/null && command -v g++ >/dev/null || missing+=(build-essential)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if [ ${#missing[@]} -gt 0 ]; then
    echo "    installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
took apt

step "ripgrep seed: @vscode/ripgrep's postinstall downloads rg from GitHub; give it Debian's"
# It looks for its cache in os.tmpdir(), so TMPDIR points into .vscode-e2e for the npm install.
mkdir -p "$E2E/tmp"
export TMPDIR="$PWD/$E2E/tmp"
rg_cache="$TMPDIR/vscode-ripgrep-cache-$RG_PKG_VERSION"
if [ ! -f "$rg_cache/$RG_ASSET" ]; then
    mkdir -p "$rg_cache"
    d=$(mktemp -d)
    cp "$(command -v rg)" "$d/rg"
    tar czf "$rg_cache/$RG_ASSET" -C "$d" rg
    rm -rf "$d"
fi
took "ripgrep seed"

step "code-server@$CS_VERSION into $CS_DIR"
if [ ! -x "$CS_DIR/node_modules/.bin/code-server" ] \
    || ! grep -q "\"version\": \"$CS_VERSION\"" "$CS_DIR/node_modules/code-server/package.json" 2>/dev/null; then
    mkdir -p "$CS_DIR"
    [ -f "$CS_DIR/package.json" ] || echo '{"name": "code-server-e2e", "private": true}' >"$CS_DIR/package.json"
    # npm_config_yes: node-pty's postinstall runs `npx node-gyp`, which `yes = false` cancels;
    # --unsafe-perm: code-server's postinstall refuses to run as root without it;
    # nodedir: node-gyp takes the headers of the installed node instead of downloading them.
    [ -d /usr/include/node ] && export npm_config_nodedir=/usr
    if ! (cd "$CS_DIR" && npm_config_yes=true npm install --no-audit --no-fund --unsafe-perm \
        --foreground-scripts "code-server@$CS_VERSION" >install.log 2>&1); then
        tail -40 "$CS_DIR/install.log"
        exit 1
    fi
fi
# Even --version writes ~/.config/code-server and ~/.local/share/code-server: keep them here.
XDG_CONFIG_HOME="$PWD/$E2E/xdg" XDG_DATA_HOME="$PWD/$E2E/xdg-data" \
    "$CS_DIR/node_modules/.bin/code-server" --version 2>&1 | tail -1
took code-server

step "npm ci (vscode-client, vscode-client/e2e)"
(cd vscode-client && npm ci --no-audit --no-fund --loglevel=error)
(cd vscode-client/e2e && npm ci --no-audit --no-fund --loglevel=error)
took "npm ci"

PY=${1:-.ci/venv/bin/python}
[ -x "$PY" ] || PY=python3
TARGET=linux-x64
case "$(uname -m)" in aarch64 | arm64) TARGET=linux-arm64 ;; esac
step "bundle the server into the extension ($TARGET, every supported Python)"
"$PY" scripts/bundle_server.py --target "$TARGET" 2>&1 | grep -v "^WARNING: Location" | tail -3
took bundle

step "build and package the extension for $TARGET (esbuild bundle + vsce, offline)"
if ! (cd vscode-client && npm run -s package -- --target "$TARGET" >"../$E2E/package.log" 2>&1); then
    cat "$E2E/package.log"
    exit 1
fi
tail -1 "$E2E/package.log"
took "build + package"

printf '\nVS Code e2e tooling ready in %ss\n' "$((SECONDS - start))"
