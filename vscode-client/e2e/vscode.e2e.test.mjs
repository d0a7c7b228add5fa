// The extension in a real VS Code: code-server with the packaged .vsix installed, driven by
// Playwright in headless Chromium. First a workspace whose interpreter is a new virtual
// environment without inplace-lsp: the bundled server runs there, its squiggle and quick fix
// show within 10 s. Then one workspace, one example file and a notebook, steps that
// build on each other: the IPL001 diagnostic shows (squiggle + Problems panel); a notebook's
// bugs show in their cells (squiggles + Problems entries, once each); the "Verify forward/backward"
// code lens on the broken block names the writing and the saving line (notification, status
// item, Problems entry); the quick fix applies; the lens then reports OK; a changed setting
// restarts the server, which applies it; a report of `inplace-lsp run` written into the
// workspace after that shows its finding within seconds (VS Code's file watcher tells the
// server), until that line is edited; and a workspace whose interpreter has no inplace-lsp,
// with "inplaceLsp.importStrategy": "fromEnvironment", gets one notification naming it
// ("Install inplace-lsp into it", "Choose interpreter"), whose "Choose interpreter" then
// starts the server with the one chosen.
//
// Run by tests/test_editor_vscode.py (scripts/ci_install_vscode_e2e.sh installs the tools), or:
//   INPLACE_LSP_PYTHON=/path/to/venv/bin/python node --test --test-reporter=spec vscode.e2e.test.mjs
//
// Env:
//   INPLACE_LSP_PYTHON  absolute path of a python with inplace-lsp and torch (required)
//   CODE_SERVER         default: <repo>/.vscode-e2e/cs/node_modules/.bin/code-server
//   INPLACE_LSP_VSIX    default: <repo>/vscode-client/inplace-lsp-linux-<arch>-<version>.vsix
//   CHROMIUM            default: /usr/bin/chromium
//   SHOT_DIR            screenshots; default: <repo>/test-artifacts/vscode
//   KEEP_RUN=1          keep the run's folder (.vscode-e2e/runs/...) for a look afterwards
//   IMAGES_DIR          also write the README's pictures there, cropped (quickfix.png,
//                       hover.png, verify.png: vscode-client/images/ holds the committed ones)
//   INPLACE_LSP_E2E_PIP=1  also click "Install inplace-lsp into it" in a third workspace: pip
//                       installs this checkout into a fresh venv (needs pip to reach an index
//                       for its dependencies; skipped otherwise)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const client = path.resolve(here, '..');
const repo = path.resolve(client, '..');
const version = JSON.parse(fs.readFileSync(path.join(client, 'package.json'), 'utf8')).version;
const CODE_SERVER = process.env.CODE_SERVER || path.join(repo, '.vscode-e2e/cs/node_modules/.bin/code-server');
const TARGET = `linux-${os.arch() === 'arm64' ? 'arm64' : 'x64'}`; // the .vsix's platform
const VSIX = path.resolve(process.env.INPLACE_LSP_VSIX || path.join(client, `inplace-lsp-${TARGET}-${version}.vsix`));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOT_DIR = path.resolve(process.env.SHOT_DIR || path.join(repo, 'test-artifacts/vscode'));
const PYTHON = process.env.INPLACE_LSP_PYTHON;
const IMAGES_DIR = process.env.IMAGES_DIR ? path.resolve(process.env.IMAGES_DIR) : null;

const EXAMPLE = 'residual_after_sigmoid.py';
const FLAGGED = '        gate += x  # in place on the sigmoid output: breaks backward';
// Non-ASCII before the flagged code (é: 1 UTF-16 unit, 😀: 2): the diagnostic, the fix's edit
// and the lens all travel in UTF-16 columns, so a server counting code points or bytes would
// put the squiggle and the edit in the wrong place.
const MARK = 'note = "é😀"; ';
const MARKED = `        ${MARK}gate += x  # in place on the sigmoid output (é😀): breaks backward`;
const FIXED = `        ${MARK}gate = gate + x  # in place on the sigmoid output (é😀): breaks backward`;
const FIX_TITLE = 'Rewrite out of place (IPL001)';
const LENS_TITLE = 'Verify forward/backward';
const LENS_TARGET = 'class Encoder(nn.Module):';
const BROKEN_TARGET = 'class GatedResidualBlock(nn.Module):';
// A notebook with one bug inside a cell (the sigmoid's output written in the same cell) and
// one across cells (exp in one cell, its output written in the next): the server analyses
// the code cells as one program and reports each in the cell that holds the write.
const NOTEBOOK = 'gates.ipynb';
const NOTEBOOK_CELLS = [
  ['code', 'import torch\n\nx = torch.ones(3, requires_grad=True)'],
  ['markdown', '# Two in-place writes autograd needs undone'],
  ['code', 'h = torch.sigmoid(x)\nh += 1  # same cell as the sigmoid'],
  ['code', 'w = torch.exp(x)'],
  ['code', 'w.mul_(2)  # the exp ran in the cell above\n(h.sum() + w.sum()).backward()'],
];

// What `inplace-lsp run` leaves in the project, and how soon the server must show it once it
// is written: it polls every 10 s when the client watches files for it, so a finding shown
// sooner came through VS Code's file watcher (and the client's trace names the report).
const RUN_REPORT = path.join('.inplace-lsp', 'last-run.json');
const RUN_DIAGNOSTIC_S = 8;
const RUN_NOTIFICATION = "Sending notification 'workspace/didChangeWatchedFiles'";
const RUN_EDITED = MARKED.replace('gate += x', 'gate += 2 * x'); // still in place: IPL001 stays

// A notebook whose second cell runs under `%%inplace_detect` in a real IPython kernel
// (ipykernel, driven through jupyter_client by kernel_cells.py below, as a Jupyter front end
// drives it: no Jupyter extension can be installed into this code-server): the kernel's report
// names the cell's line, and the server shows it on that cell in the open notebook.
const KERNEL_NOTEBOOK = 'trained.ipynb';
const KERNEL_CELLS = [
  ['code', '%load_ext inplace_lsp\nimport torch\n\nx = torch.ones(3, requires_grad=True)'],
  ['code', '%%inplace_detect\ny = torch.sigmoid(x)\ny.mul_(2)  # sigmoid saved its output\ny.sum().backward()'],
];
const KERNEL_RUNNER = `
import json, os, sys
from jupyter_client.manager import start_new_kernel

notebook = sys.argv[1]
with open(notebook, encoding="utf-8") as f:
    cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
# What a Jupyter server gives a notebook's kernel: the notebook's path, and its folder to run in.
env = dict(os.environ, JPY_SESSION_NAME=os.path.basename(notebook), PYTHONWARNINGS="ignore")
km, kc = start_new_kernel(startup_timeout=120, cwd=os.path.dirname(notebook), env=env)
try:
    for cell in cells:
        shown = []
        def keep(message):
            if message["msg_type"] == "stream":
                shown.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                shown.append("\\n".join(message["content"]["traceback"]))
        reply = kc.execute_interactive("".join(cell["source"]), output_hook=keep, timeout=120)
        print(json.dumps({"status": reply["content"]["status"], "shown": "".join(shown)}))
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
`;

// The first workspace: its interpreter is a new virtual environment without inplace-lsp
// (nor pip): the bundled server runs in it, with nothing installed.
const BUNDLED_WS = 'bundled';
const FIRST_DIAGNOSTIC_S = 10; // from opening the file to the squiggle and the quick fix
// The second: the same interpreter, with "inplaceLsp.importStrategy": "fromEnvironment".
const NO_SERVER_WS = 'no-server';
const NO_SERVER_FILE = 'model.py';
// The third: the same, with pip in the venv, for the Install button (INPLACE_LSP_E2E_PIP=1).
const INSTALL_WS = 'install';
const PIP = process.env.INPLACE_LSP_E2E_PIP === '1';

const t0 = Date.now();
let lapAt = t0;
function lap(message) {
  const now = Date.now();
  console.log(`[${((now - t0) / 1000).toFixed(1)}s +${((now - lapAt) / 1000).toFixed(1)}s] ${message}`);
  lapAt = now;
}

let run, env, server, browser, page, port, logFile;
let failed = false;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port: p } = s.address();
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

async function waitHttp(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (server.exitCode !== null) throw new Error(`code-server exited (${server.exitCode}); see ${logFile}`);
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server did not answer at ${url} within ${ms} ms; see ${logFile}`);
}

/** A folder for this run: under .vscode-e2e/runs, unless that path is too long for the unix
 *  sockets code-server and Chromium create in TMPDIR (108 bytes with their long names). */
function runFolder() {
  const runs = path.join(repo, '.vscode-e2e', 'runs');
  fs.mkdirSync(runs, { recursive: true });
  const dir = fs.mkdtempSync(path.join(runs, 'r'));
  if (path.join(dir, 't').length <= 50) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  return fs.mkdtempSync(path.join(os.tmpdir(), 'ipl-e2e-'));
}

before(async () => {
  try {
    await setUp();
  } catch (error) {
    failed = true; // after() prints the logs
    throw error;
  }
});

async function setUp() {
  assert.ok(PYTHON && path.isAbsolute(PYTHON), 'INPLACE_LSP_PYTHON must be the absolute path of a python with inplace-lsp and torch');
  for (const [what, file] of [['code-server', CODE_SERVER], ['the .vsix', VSIX], ['chromium', CHROMIUM], ['python', PYTHON]]) {
    assert.ok(fs.existsSync(file), `${what} not found: ${file} (run scripts/ci_install_vscode_e2e.sh)`);
  }
  run = runFolder();
  const data = path.join(run, 'data');
  const exts = path.join(run, 'exts');
  const ws = path.join(run, 'ws');
  const tmp = path.join(run, 't');
  for (const d of [path.join(data, 'User'), exts, ws, tmp]) fs.mkdirSync(d, { recursive: true });
  fs.mkdirSync(SHOT_DIR, { recursive: true });

  const source = fs.readFileSync(path.join(repo, 'examples', EXAMPLE), 'utf8');
  assert.ok(source.includes(`${FLAGGED}\n`), `examples/${EXAMPLE} no longer has the line: ${FLAGGED}`);
  fs.writeFileSync(path.join(ws, EXAMPLE), source.replace(FLAGGED, MARKED));
  fs.writeFileSync(path.join(ws, NOTEBOOK), notebookJson(NOTEBOOK_CELLS));
  fs.writeFileSync(path.join(ws, KERNEL_NOTEBOOK), notebookJson(KERNEL_CELLS));
  fs.writeFileSync(path.join(run, 'kernel_cells.py'), KERNEL_RUNNER);
  // The report's folder is there from the start, as after an earlier run: VS Code's watcher
  // (@parcel/watcher, inotify) can miss a file written at once into a folder just created
  // (parcel-bundler/watcher#243), and only the server's 10 s poll would show that one.
  fs.mkdirSync(path.join(ws, path.dirname(RUN_REPORT)));
  // A virtual environment of the same Python without inplace-lsp; run with -E, as the test's
  // PYTHONPATH (the checkout under test, which the other workspace's server imports) would
  // otherwise hand it one.
  const bare = path.join(run, 'bare');
  execFileSync(PYTHON, ['-m', 'venv', '--without-pip', bare]);
  const bareInterpreter = { 'inplaceLsp.interpreter': [path.join(bare, 'bin', 'python'), '-E'] };
  const first = path.join(run, BUNDLED_WS);
  fs.mkdirSync(path.join(first, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(first, '.vscode', 'settings.json'), JSON.stringify(bareInterpreter, null, 2));
  fs.writeFileSync(path.join(first, EXAMPLE), source);
  const other = path.join(run, NO_SERVER_WS);
  fs.mkdirSync(path.join(other, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(other, '.vscode', 'settings.json'),
    JSON.stringify({ ...bareInterpreter, 'inplaceLsp.importStrategy': 'fromEnvironment' }, null, 2));
  fs.writeFileSync(path.join(other, NO_SERVER_FILE), source);
  if (PIP) {
    const venv = path.join(run, 'pip-venv');
    execFileSync(PYTHON, ['-m', 'venv', venv]);
    const third = path.join(run, INSTALL_WS);
    fs.mkdirSync(path.join(third, '.vscode'), { recursive: true });
    fs.writeFileSync(path.join(third, '.vscode', 'settings.json'),
      JSON.stringify({
        'inplaceLsp.interpreter': [path.join(venv, 'bin', 'python'), '-E'],
        'inplaceLsp.importStrategy': 'fromEnvironment',
      }, null, 2));
    fs.writeFileSync(path.join(third, NO_SERVER_FILE), source);
  }
  lap('workspaces written');
  fs.writeFileSync(settingsFile(), JSON.stringify(settings(), null, 2));

  // Everything code-server and Chromium write (config.yaml, logs, ipc sockets, crash dirs)
  // stays in the run's folder, not in $HOME or /tmp.
  env = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(run, 'xdg'),
    XDG_DATA_HOME: path.join(run, 'xdg-data'),
    XDG_RUNTIME_DIR: tmp,
    TMPDIR: tmp,
    PYTHONUNBUFFERED: '1',
  };
  const common = ['--config', path.join(run, 'config.yaml'), '--user-data-dir', data, '--extensions-dir', exts];
  execFileSync(CODE_SERVER, [...common, '--install-extension', VSIX], { env, stdio: 'inherit' });
  lap(`installed ${path.relative(repo, VSIX)}`);

  port = await freePort();
  logFile = path.join(run, 'code-server.log');
  const out = fs.openSync(logFile, 'w');
  server = spawn(CODE_SERVER, [...common,
    '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
    '--disable-getting-started-override', ws],
  { env, stdio: ['ignore', out, out], detached: true }); // its own process group, killed whole in after()
  await waitHttp(`http://127.0.0.1:${port}/healthz`, 60000);
  lap(`code-server up on port ${port}`);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    env,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  lap('chromium up');
}

// Killed from outside (the pytest wrapper's timeout, Ctrl+C): code-server runs in a process
// group of its own, which would outlive us.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    if (server && server.exitCode === null) {
      try { process.kill(-server.pid, 'SIGKILL'); } catch { /* gone */ }
    }
    console.log(`# ${signal}: stopped`);
    dumpLogs();
    if (run) console.log(`# kept ${run}`);
    process.exit(128 + os.constants.signals[signal]);
  });
}

after(async () => {
  if (failed) dumpLogs();
  try {
    if (browser) await browser.close();
  } catch {
    // already gone
  }
  if (server && server.exitCode === null) {
    // The extension host and the language server outlive code-server: end the whole group.
    try { process.kill(-server.pid, 'SIGTERM'); } catch { /* gone */ }
    await new Promise((r) => setTimeout(r, 1000));
    try { process.kill(-server.pid, 'SIGKILL'); } catch { /* gone */ }
  }
  if (!run) return;
  if (process.env.KEEP_RUN || failed) console.log(`# kept ${run}`);
  else fs.rmSync(run, { recursive: true, force: true });
});

/** An nbformat 4 notebook of (kind, source) cells, Python kernel. */
function notebookJson(cells) {
  return JSON.stringify({
    cells: cells.map(([kind, text]) => ({
      cell_type: kind,
      metadata: {},
      source: text.split(/(?<=\n)/),
      ...(kind === 'code' ? { execution_count: null, outputs: [] } : {}),
    })),
    metadata: {
      kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
      language_info: { name: 'python' },
    },
    nbformat: 4,
    nbformat_minor: 5,
  }, null, 1);
}

function settingsFile() {
  return path.join(run, 'data', 'User', 'settings.json');
}

/** The user settings of the run. */
function settings() {
  return {
    // The extension host rebuilds PATH from a login shell: name the interpreter absolutely.
    // (No Python extension in code-server here, so the setting is what the extension uses.)
    'inplaceLsp.interpreter': [PYTHON],
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'update.mode': 'none',
    'window.restoreWindows': 'none',
    'editor.codeLens': true,
    // Messages with their params, once the step that needs it sets the log level to Trace.
    'inplaceLsp.trace.server': 'verbose',
    'editor.minimap.enabled': false,
    // Text typed into settings.json stays as typed.
    'editor.autoClosingBrackets': 'never',
    'editor.autoClosingQuotes': 'never',
    'editor.autoIndent': 'none',
    'editor.formatOnType': false,
    // The workspace lies inside this repository: no "open the parent repository?" toast.
    'git.enabled': false,
    'git.openRepositoryInParentFolders': 'never',
  };
}

async function shot(name) {
  const file = path.join(SHOT_DIR, name);
  await page.screenshot({ path: file });
  return path.relative(repo, file);
}

/** With IMAGES_DIR set, a picture for the README: the part of the page the elements cover
 *  (their bounding boxes' union, with a margin). */
async function picture(name, locators) {
  if (!IMAGES_DIR) return;
  const boxes = [];
  for (const locator of locators) {
    const box = await locator.boundingBox();
    if (box) boxes.push(box);
  }
  assert.ok(boxes.length > 0, `nothing to picture for ${name}`);
  const margin = 12;
  const view = page.viewportSize();
  const x = Math.max(Math.min(...boxes.map((b) => b.x)) - margin, 0);
  const y = Math.max(Math.min(...boxes.map((b) => b.y)) - margin, 0);
  const right = Math.min(Math.max(...boxes.map((b) => b.x + b.width)) + margin, view.width);
  const bottom = Math.min(Math.max(...boxes.map((b) => b.y + b.height)) + margin, view.height);
  fs.mkdirSync(IMAGES_DIR, { recursive: true });
  const file = path.join(IMAGES_DIR, name);
  await page.screenshot({ path: file, clip: { x, y, width: right - x, height: bottom - y } });
  lap(`picture ${file}`);
}

/** The first rendered editor line holding `needle` (no spaces in it: the editor renders them
 *  as no-break spaces). */
function editorLine(needle) {
  return page.locator('.monaco-editor .view-lines .view-line', { hasText: needle }).first();
}

/** Runs one step (skipped once one failed: they build on each other); on failure takes
 *  fail-<step>.png and lets after() print the logs. */
async function step(t, name, body) {
  if (failed) {
    t.skip('an earlier step failed');
    return;
  }
  try {
    await body();
  } catch (error) {
    failed = true;
    if (page) console.log(`# screenshot ${await shot(`fail-${name}.png`).catch((e) => e.message)}`);
    throw error;
  }
}

function* walk(dir) {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else yield p;
  }
}

function dumpLogs() {
  if (!run) return;
  const tail = (file, n) => fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
  if (logFile && fs.existsSync(logFile)) console.log(`# ---- ${logFile}\n${tail(logFile, 40)}`);
  // The extension's output channel ("Inplace LSP": client log + server stderr) and the
  // extension host's log live under the user-data-dir's logs folder.
  for (const file of walk(path.join(run, 'data', 'logs'))) {
    if (/Inplace LSP|inplace-lsp|remoteexthost|exthost\.log/i.test(file)) {
      console.log(`# ---- ${file}\n${tail(file, 80)}`);
    }
  }
}

/** The extension's log files ("Inplace LSP" output channel, on disk). */
function* logFiles() {
  for (const file of walk(path.join(run, 'data', 'logs'))) {
    if (/Inplace LSP/.test(path.basename(file))) yield file;
  }
}

/** The lines of the extension's log at level error (the server's stderr lands there too). */
function logErrors() {
  return [...logFiles()].flatMap((file) => fs.readFileSync(file, 'utf8').split('\n'))
    .filter((line) => /\[error\]/i.test(line));
}

/** The last line of the extension's log that holds `needle`, waiting up to `ms` for it. */
async function logLine(needle, ms) {
  const end = Date.now() + ms;
  for (;;) {
    for (const file of logFiles()) {
      const found = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.includes(needle));
      if (found.length > 0) return found[found.length - 1];
    }
    assert.ok(Date.now() < end, `no "${needle}" in the extension's log within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The first entry of the extension's log (a line with the lines of its trace's params) that
 *  holds all of `needles`, waiting up to `ms` for it. */
async function logEntry(needles, ms) {
  const end = Date.now() + ms;
  for (;;) {
    for (const file of logFiles()) {
      const entries = fs.readFileSync(file, 'utf8').split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[)/);
      const found = entries.find((e) => needles.every((n) => e.includes(n)));
      if (found) return found;
    }
    assert.ok(Date.now() < end, `no entry with ${JSON.stringify(needles)} in the extension's log within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The text of the rendered line that contains `needle` (spaces normalised), or null. */
function lineWith(needle) {
  return page.evaluate((n) => {
    for (const l of document.querySelectorAll('.monaco-editor .view-lines .view-line')) {
      const text = l.textContent.replace(/\u00a0/g, ' ');
      if (text.includes(n)) return text;
    }
    return null;
  }, needle);
}

/** Waits until a rendered line reads exactly `expected`. */
function waitForLine(expected) {
  return page.waitForFunction((e) => {
    for (const l of document.querySelectorAll('.monaco-editor .view-lines .view-line')) {
      if (l.textContent.replace(/\u00a0/g, ' ') === e) return true;
    }
    return false;
  }, expected, { timeout: 30000 });
}

/** Puts the cursor at 1-based `line`, `column` (UTF-16) of the active editor with Go to Line
 *  (a mouse click could land anywhere once the editor scrolled), and waits until the editor
 *  has the focus and the status bar shows the line. */
async function goTo(line, column) {
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 10000 });
  await page.locator('.monaco-editor.focused').first().waitFor({ timeout: 10000 });
  // (its Col counts characters as they look: 😀 is one there, two in UTF-16)
  await page.locator('.statusbar-item', { hasText: `Ln ${line}, Col ` }).first().waitFor({ timeout: 10000 });
}

test('an interpreter without inplace-lsp runs the bundled server: squiggle and quick fix within 10 s', async (t) => {
  await step(t, 'bundled', async () => {
    const first = path.join(run, BUNDLED_WS);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(first)}`);
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: EXAMPLE });
    await row.waitFor({ timeout: 90000 });
    lap(`${BUNDLED_WS}: workbench and explorer rendered`);
    const opened = Date.now();
    await row.click();
    // The extension activates on the Python file; the bundled server unpacks itself (a first
    // run), starts in the bare interpreter and analyses the file.
    const left = () => FIRST_DIAGNOSTIC_S * 1000 - (Date.now() - opened);
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: Math.max(left(), 1) });
    const squiggleS = (Date.now() - opened) / 1000;
    lap(`error squiggle ${squiggleS.toFixed(1)} s after opening ${EXAMPLE}`);
    await goTo(22, 10);
    await page.keyboard.press('Control+.');
    await page.locator('.action-widget .monaco-list-row', { hasText: FIX_TITLE }).first()
      .waitFor({ timeout: Math.max(left(), 1) });
    lap(`quick fix "${FIX_TITLE}" offered ${((Date.now() - opened) / 1000).toFixed(1)} s after opening`);
    lap(`screenshot ${await shot('bundled-quickfix.png')}`);
    await picture('quickfix.png', [editorLine('forward(self,'), page.locator('.action-widget').first()]);
    await page.keyboard.press('Escape');
    // The server that runs is the bundled one, in the bare interpreter (the extension's log).
    const line = await logLine('Starting server:', 10000);
    lap(`log: ${line.replace(/^.*Starting server:/, 'Starting server:')}`);
    const bundledPython = path.join(run, 'bare', 'bin', 'python');
    assert.ok(line.includes(`Starting server: ${bundledPython} -E `), line);
    assert.match(line, /bundled\/tool\/serve\.py serve /);
    assert.match(line, /inplace_lsp from \S*bundled\/libs\/common\/inplace_lsp/);
    assert.deepEqual(logErrors(), [], 'a normal start logs no error');
  });
});

test('the IPL001 diagnostic shows: squiggle and Problems entry', async (t) => {
  await step(t, 'diagnostic', async () => {
    // The folder named: code-server would reopen the last one (the first test's).
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(path.join(run, 'ws'))}`);
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: EXAMPLE });
    await row.waitFor({ timeout: 90000 });
    lap('workbench and explorer rendered');
    await row.click();
    await page.locator('.monaco-editor .view-lines').first().waitFor({ timeout: 30000 });
    lap(`${EXAMPLE} open`);

    // The extension activates on the Python file, starts the server, which analyses it.
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 90000 });
    lap('error squiggle rendered');

    await page.keyboard.press('Control+Shift+M');
    const marker = page.locator('.markers-panel .monaco-list-row', { hasText: 'IPL001' }).first();
    await marker.waitFor({ timeout: 30000 });
    const text = (await marker.innerText()).replace(/\s+/g, ' ');
    lap(`Problems panel: ${text}`);
    assert.match(text, /IPL001/);
    assert.match(text, /inplace-lsp/);
    assert.match(text, /gate = gate \+ x/);
    // `gate` starts at UTF-16 column 22 (0-based): the panel shows it 1-based. Code points
    // would give Col 22, UTF-8 bytes Col 26.
    assert.match(text, /\[Ln 22, Col 23\]/);
    lap(`screenshot ${await shot('diagnostic.png')}`);

    // Hovering the squiggle shows the finding: which op saved the tensor, what overwrote it.
    // (a hover can miss the pointer's first arrival, as a person's can: up to three tries)
    const squiggle = page.locator('.monaco-editor .squiggly-error').first();
    const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: 'Saved by:' }).first();
    for (let attempt = 1; ; attempt++) {
      const box = await squiggle.boundingBox();
      assert.ok(box, 'the squiggle has a place on the screen');
      await page.mouse.move(5, 5);
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 4 });
      try {
        await hover.waitFor({ timeout: 10000 });
        break;
      } catch (error) {
        if (attempt === 3) throw error;
        lap(`no hover yet (try ${attempt})`);
      }
    }
    const said = (await hover.innerText()).replace(/\s+/g, ' ').trim();
    lap(`hover: ${said.slice(0, 160)}...`);
    assert.match(said, /IPL001/);
    lap(`screenshot ${await shot('hover.png')}`);
    await picture('hover.png', [editorLine('torch.sigmoid(self.gate_proj'), hover]);
    await page.mouse.move(5, 5);
    await hover.waitFor({ state: 'hidden', timeout: 10000 }).catch(() => page.keyboard.press('Escape'));
  });
});

test('a notebook shows its two bugs: squiggles in their cells and Problems entries', async (t) => {
  await step(t, 'notebook', async () => {
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: NOTEBOOK }).click();
    const notebook = page.locator('.notebook-editor');
    await notebook.locator('.cell-list-container .code-cell-row').first().waitFor({ timeout: 30000 });
    lap(`${NOTEBOOK} open in the notebook editor`);
    // Each code cell is an editor of its own: the squiggles must be in the two cells that
    // hold the writes, none elsewhere.
    const cells = notebook.locator('.cell-list-container .code-cell-row');
    const squiggled = async () => {
      const found = [];
      for (let i = 0; i < await cells.count(); i++) {
        if (await cells.nth(i).locator('.squiggly-error').count() > 0) found.push(i);
      }
      return found;
    };
    const end = Date.now() + 90000;
    let found = [];
    while ((found = await squiggled()).length < 2) {
      assert.ok(Date.now() < end, `error squiggles in code cells ${JSON.stringify(found)} only, after 90 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.deepEqual(found, [1, 3], 'squiggles in the 2nd and 4th code cells');
    lap('error squiggles rendered in code cells 2 and 4');

    const panel = page.locator('.markers-panel');
    if (!await panel.isVisible()) await page.keyboard.press('Control+Shift+M');
    const entries = panel.locator('.monaco-list-row', { hasText: 'IPL001' });
    const inCell = entries.filter({ hasText: 'torch.sigmoid saved its output' }).first();
    const acrossCells = entries.filter({ hasText: 'torch.exp saved its output' }).first();
    await inCell.waitFor({ timeout: 30000 });
    await acrossCells.waitFor({ timeout: 30000 });
    const inText = (await inCell.innerText()).replace(/\s+/g, ' ');
    const acrossText = (await acrossCells.innerText()).replace(/\s+/g, ' ');
    lap(`Problems panel: ${inText} | ${acrossText}`);
    // Once each: the cells' diagnostics come by one route (pulled), not pulled and pushed.
    assert.equal(await entries.count(), 2, 'two IPL001 entries in the Problems panel');
    // Positions are the cells' own: `h += 1` is line 2 of its cell, `w.mul_(2)` line 1.
    assert.match(inText, /\(line 1\)/);
    assert.match(inText, /\[Ln 2, Col 1\]/);
    assert.match(acrossText, /\(line 1 of code cell 3\)/);
    assert.match(acrossText, /\[Ln 1, Col 1\]/);
    lap(`screenshot ${await shot('notebook.png')}`);
    // Back to the Python file for the steps that follow (the notebook took its preview tab).
    await page.keyboard.press('Control+W');
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: EXAMPLE }).click();
    await page.locator('.tabs-container .tab.active', { hasText: EXAMPLE }).waitFor({ timeout: 10000 });
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 30000 });
  });
});

test('the Verify code lens on the broken block names the write and the saving line', async (t) => {
  await step(t, 'verify-broken', async () => {
    await clickLensAbove(14, BROKEN_TARGET);
    await statusSays('verify inplace-error');
    const summary = 'GatedResidualBlock fails: line 22 overwrites the output of torch.sigmoid saved at line 21';
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: summary }).first();
    await toast.waitFor({ timeout: 30000 });
    lap(`notification: ${(await toast.innerText()).replace(/\s+/g, ' ').trim()}`);
    // One Problems entry for the bug: the analysis's IPL001 on the writing line says verify
    // confirmed it, with verify's places; no second entry from verify beside it.
    const confirmed = `(confirmed by verify: ${summary}`;
    const entry = page.locator('.markers-panel .monaco-list-row', { hasText: confirmed }).first();
    await entry.waitFor({ timeout: 30000 });
    const text = (await entry.innerText()).replace(/\s+/g, ' ');
    lap(`Problems panel: ${text}`);
    assert.match(text, /IPL001/);
    assert.match(text, /\[Ln 22, Col 23\]/);
    const apart = page.locator('.markers-panel .monaco-list-row', { hasText: 'inplace-lsp verify' });
    assert.equal(await apart.count(), 0, 'verify adds no second Problems entry');
    lap(`screenshot ${await shot('verify-failed.png')}`);
    await picture('verify.png', [toast, entry]);
  });
});

test('the quick fix applies and the diagnostic clears', async (t) => {
  await step(t, 'quickfix', async () => {
    // Inside `gate` on the flagged line (UTF-16 column 25: after 8 spaces and the marker).
    await goTo(22, 25);
    await page.keyboard.press('Control+.');
    const rows = page.locator('.action-widget .monaco-list-row');
    await rows.filter({ hasText: FIX_TITLE }).first().waitFor({ timeout: 30000 });
    const offered = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
    lap(`quick fixes offered: ${offered.join(' | ')}`);
    // The preferred fix comes first and is focused; a mouse click would hit the pointer
    // blocker overlay, Enter applies the focused entry.
    const focused = (await page.locator('.action-widget .monaco-list-row.focused').first().innerText()).trim();
    assert.match(focused, new RegExp(FIX_TITLE.replace(/[()]/g, '\\$&')));
    await shot('quickfix-menu.png');
    await page.keyboard.press('Enter');
    await waitForLine(FIXED);
    lap(`fix applied: ${(await lineWith('gate = gate + x'))?.trim()}`);
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ state: 'detached', timeout: 30000 });
    await page.locator('.markers-panel .monaco-list-row', { hasText: 'IPL001' }).first()
      .waitFor({ state: 'detached', timeout: 30000 });
    lap('squiggle and Problems entry gone');
    assert.equal(await lineWith('gate += x'), null);
  });
});

/** Clicks the code lens right above the line that starts with `target` (scrolled into view). */
async function clickLensAbove(line, target) {
  await goTo(line, 1);
  const lenses = page.locator('.monaco-editor .codelens-decoration a', { hasText: LENS_TITLE });
  await lenses.first().waitFor({ timeout: 60000 });
  const index = await page.evaluate(({ title, target }) => {
    const row = [...document.querySelectorAll('.monaco-editor .view-lines .view-line')]
      .find((l) => l.textContent.replace(/\u00a0/g, ' ').startsWith(target));
    if (!row) return -2;
    const top = row.getBoundingClientRect().top;
    const links = [...document.querySelectorAll('.monaco-editor .codelens-decoration a')]
      .filter((a) => a.textContent.includes(title));
    let best = -1;
    let bestGap = Infinity;
    links.forEach((a, i) => {
      const gap = top - a.getBoundingClientRect().top;
      if (gap > 0 && gap < bestGap) { best = i; bestGap = gap; }
    });
    return bestGap < 2 * row.getBoundingClientRect().height ? best : -1;
  }, { title: LENS_TITLE, target });
  assert.ok(index >= 0, `no "${LENS_TITLE}" lens right above "${target}" (${index})`);
  await lenses.nth(index).click();
  lap(`lens "${LENS_TITLE}" above ${target} clicked`);
}

/** Waits for the status item to show `text` after a verify (the first one starts a worker). */
async function statusSays(text) {
  const status = page.locator('.statusbar-item', { hasText: 'inplace-lsp' }).first();
  await page.locator('.statusbar-item', { hasText: `inplace-lsp: ${text}` }).first()
    .waitFor({ timeout: 120000 })
    .catch(async (error) => {
      const now = await status.innerText().catch(() => '(no status item)');
      throw new Error(`status bar did not say "${text}" (it says: ${now}): ${error.message}`);
    });
  lap(`status bar: ${(await status.innerText()).trim()}`);
}

test('the Verify code lens runs the fixed code and reports OK', async (t) => {
  await step(t, 'verify', async () => {
    await clickLensAbove(26, LENS_TARGET);
    await statusSays('verify ok');
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Encoder' })
      .filter({ hasText: /forward and backward OK/ }).first();
    await toast.waitFor({ timeout: 30000 });
    lap(`notification: ${(await toast.innerText()).replace(/\s+/g, ' ').trim()}`);
    assert.equal(await page.locator('.monaco-editor .squiggly-error').count(), 0);
    lap(`screenshot ${await shot('verify.png')}`);
  });
});

test('a changed setting restarts the server, which applies it', async (t) => {
  await step(t, 'restart', async () => {
    await goTo(22, 25);
    await page.keyboard.press('Control+Z');
    await waitForLine(MARKED);
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 30000 });
    lap('fix undone: the error squiggle is back');

    // As a user would: the user settings.json in the editor, edited and saved.
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 10000 });
    await input.fill('>Preferences: Open User Settings (JSON)');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Open User Settings (JSON)' }).first()
      .waitFor({ timeout: 10000 });
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: 'settings.json' }).waitFor({ timeout: 30000 });
    await page.locator('.monaco-editor.focused').first().waitFor({ timeout: 10000 });
    const changed = { ...settings(), 'inplaceLsp.severity': { IPL001: 'warning' } };
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify(changed, null, 2));
    await page.keyboard.press('Control+S');
    const end = Date.now() + 10000;
    for (let saved = ''; saved !== JSON.stringify(changed, null, 2);) {
      assert.ok(Date.now() < end, `settings.json not saved as typed within 10 s:\n${saved}`);
      await new Promise((r) => setTimeout(r, 100));
      saved = fs.readFileSync(settingsFile(), 'utf8');
    }
    lap('"inplaceLsp.severity": {"IPL001": "warning"} saved in the user settings.json');

    // A restart shows in the status item: back to idle, the last verify result gone (a
    // setting the server merely followed would leave it).
    await page.locator('.statusbar-item', { hasText: /^\W*inplace-lsp$/ }).first().waitFor({ timeout: 60000 });
    lap('status item back to idle: the server restarted');
    await page.locator('.tabs-container .tab', { hasText: EXAMPLE }).click();
    await page.locator('.monaco-editor .squiggly-warning').first().waitFor({ timeout: 60000 });
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ state: 'detached', timeout: 30000 });
    lap('IPL001 is now a warning squiggle, from the new server');
    assert.deepEqual(logErrors(), [], 'a normal stop and start log no error');
  });
});

/** Writes `findings` as `inplace-lsp run` writes its report into `folder`: format 1, to a
 *  temporary file renamed into place (the watcher sees the whole file appear at once). */
function writeRunReport(folder, findings) {
  const report = path.join(folder, RUN_REPORT);
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const data = {
    tool: 'inplace-lsp run', format: 1, run_id: `e2e-${Date.now().toString(16)}`,
    rank: null, world_size: null, pid: process.pid, command: [EXAMPLE], cwd: folder,
    started: now, finished: now, exit_code: 1, findings,
  };
  const temporary = path.join(path.dirname(report), `.${path.basename(report)}.${process.pid}.tmp`);
  fs.writeFileSync(temporary, `${JSON.stringify(data, null, 1)}\n`);
  fs.renameSync(temporary, report);
}

/** Sets the "Inplace LSP" output channel's log level to Trace, as a user would (Developer: Set
 *  Log Level...): the language client then logs each message, with its params. */
async function traceClient() {
  const input = page.locator('.quick-input-widget input');
  const pick = async (typed, row) => {
    await input.fill(typed);
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: row }).first()
      .waitFor({ timeout: 10000 });
    await page.keyboard.press('Enter');
  };
  await page.keyboard.press('F1');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await pick('>Developer: Set Log Level', 'Set Log Level');
  await pick('Inplace LSP', 'Inplace LSP');
  await pick('Trace', 'Trace');
  await input.waitFor({ state: 'hidden', timeout: 10000 });
  lap('log level of the "Inplace LSP" channel: Trace');
}

test('a run report written after the server started shows its finding within 8 s, until its line is edited', async (t) => {
  await step(t, 'run-findings', async () => {
    await traceClient();
    const ws = path.join(run, 'ws');
    const file = path.join(ws, EXAMPLE);
    // Saved before the run, as a user does: the run ran the file on disk. (An earlier step's
    // quick fix and its undo can leave the fixed text there.)
    await goTo(22, 1);
    await page.keyboard.press('Control+S');
    const saved = Date.now() + 10000;
    let lines;
    while ((lines = fs.readFileSync(file, 'utf8').split('\n'))[21] !== MARKED) {
      assert.ok(Date.now() < saved, `${EXAMPLE} not saved within 10 s: line 22 is ${lines[21]}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const place = (line) => ({ path: file, line, source: lines[line - 1].trim() });
    const said = 'SigmoidBackward0 saved at';
    const written = Date.now();
    writeRunReport(ws, [{
      severity: 'error',
      kind: 'inplace-error',
      message: `${file}:22 modifies in place a tensor that ${said} ${file}:21; backward needs its old value`,
      mutation: place(22),
      saved_by: { ...place(21), op: 'SigmoidBackward0' },
      call_site: null,
      related: [],
      tensor: { shape: [8, 32], dtype: 'torch.float32', device: 'cpu' },
      versions: [],
      count: 1,
    }]);
    lap(`wrote ws/${RUN_REPORT} (the server runs)`);

    // The finding is an error; IPL001 is a warning since the last step: the error squiggle
    // and the Problems entry are the run's.
    const left = () => Math.max(RUN_DIAGNOSTIC_S * 1000 - (Date.now() - written), 1);
    const panel = page.locator('.markers-panel');
    if (!await panel.isVisible()) await page.keyboard.press('Control+Shift+M');
    const entry = panel.locator('.monaco-list-row', { hasText: said }).first();
    await entry.waitFor({ timeout: left() });
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: left() });
    const shownS = (Date.now() - written) / 1000;
    const text = (await entry.innerText()).replace(/\s+/g, ' ');
    lap(`Problems panel, ${shownS.toFixed(1)} s after the report was written: ${text}`);
    assert.match(text, /inplace-lsp run/);
    assert.match(text, /inplace-error/);
    assert.match(text, /\[Ln 22, Col 9\]/);
    // The report names places by absolute path; in the file they are lines, as elsewhere.
    assert.match(text, /line 22 modifies in place a tensor that SigmoidBackward0 saved at line 21/);
    assert.ok(!text.includes(ws), `an absolute path in the Problems entry: ${text}`);
    // The saving line comes with it, as related information (a row under the entry).
    const saving = panel.locator('.monaco-list-row', { hasText: /\[Ln 21, Col 9\].*SigmoidBackward0/ }).first();
    await saving.waitFor({ timeout: 10000 });
    lap(`related: ${(await saving.innerText()).replace(/\s+/g, ' ')}`);
    // VS Code's watcher told the server (the client's trace has the notification naming the
    // report): its poll, every 10 s, may not have come yet.
    const report = pathToFileURL(path.join(ws, RUN_REPORT)).href;
    const sent = await logEntry([RUN_NOTIFICATION, report], 10000);
    lap(`log: ${sent.replace(/^.*Sending/, 'Sending').replace(/\s+/g, ' ')}`);
    lap(`screenshot ${await shot('run-findings.png')}`);

    // Typed into that line, the code is no longer what ran: the run's finding goes, the
    // analysis's IPL001 (still an in-place write) stays.
    await goTo(22, 31);
    await page.keyboard.type('2 * ');
    await waitForLine(RUN_EDITED);
    lap(`typed: ${(await lineWith('gate += 2 * x'))?.trim()}`);
    await entry.waitFor({ state: 'detached', timeout: 30000 });
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ state: 'detached', timeout: 30000 });
    await page.locator('.monaco-editor .squiggly-warning').first().waitFor({ timeout: 30000 });
    await panel.locator('.monaco-list-row', { hasText: 'IPL001' }).first().waitFor({ timeout: 30000 });
    lap('run finding gone from the squiggles and the Problems panel; IPL001 stays');
    // Back to the file as on disk, so no unsaved change rides into the next step.
    for (let undo = 0; await lineWith('gate += x  #') === null; undo++) {
      assert.ok(undo < 8, `the edit not undone: ${await lineWith('gate +=')}`);
      await page.keyboard.press('Control+Z');
      await new Promise((r) => setTimeout(r, 100));
    }
    await waitForLine(MARKED);
  });
});

test('a notebook cell run under %%inplace_detect in a real kernel: its finding squiggles on the cell\'s line', async (t) => {
  await step(t, 'notebook-run', async () => {
    const ws = path.join(run, 'ws');
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: KERNEL_NOTEBOOK }).click();
    const notebook = page.locator('.notebook-editor');
    const cells = notebook.locator('.cell-list-container .code-cell-row');
    await cells.nth(1).waitFor({ timeout: 30000 });
    lap(`${KERNEL_NOTEBOOK} open in the notebook editor`);
    const panel = page.locator('.markers-panel');
    if (!await panel.isVisible()) await page.keyboard.press('Control+Shift+M');
    const entry = panel.locator('.monaco-list-row', { hasText: 'inplace-lsp run' })
      .filter({ hasText: 'cell 2 (In[2]), line 3' }).first();
    assert.equal(await entry.count(), 0, 'no run finding before the kernel ran the cells');

    // The user runs the cells (here: a real ipykernel, through jupyter_client).
    const ran = Date.now();
    const printed = execFileSync(PYTHON, [path.join(run, 'kernel_cells.py'), path.join(ws, KERNEL_NOTEBOOK)],
      { encoding: 'utf8', timeout: 180000 });
    const replies = printed.trim().split('\n').map((line) => JSON.parse(line));
    assert.deepEqual(replies.map((r) => r.status), ['ok', 'error'], printed);
    assert.match(replies[1].shown, /written at {2}cell 2 \(In\[2\]\), line 3 by mul_/, printed);
    const report = JSON.parse(fs.readFileSync(path.join(ws, RUN_REPORT), 'utf8'));
    assert.equal(report.findings[0].mutation.cell.notebook, path.join(ws, KERNEL_NOTEBOOK));
    lap(`kernel ran the cells in ${((Date.now() - ran) / 1000).toFixed(1)} s: ${replies[1].shown.split('\n').find((l) => l.includes('written at'))}`);

    await entry.waitFor({ timeout: 30000 });
    const text = (await entry.innerText()).replace(/\s+/g, ' ');
    lap(`Problems panel, ${((Date.now() - ran) / 1000).toFixed(1)} s after the run began: ${text}`);
    assert.match(text, /inplace-error/);
    assert.match(text, /\[Ln 3, Col 1\]/, 'on the cell\'s own line 3: y.mul_(2)');
    // The squiggle is in the second code cell, on its third line (y.mul_(2)).
    const squiggle = cells.nth(1).locator('.squiggly-error').first();
    await squiggle.waitFor({ timeout: 30000 });
    const lineOf = async (locator) => {
      const box = await locator.boundingBox();
      const rows = cells.nth(1).locator('.view-line');
      for (let i = 0; i < await rows.count(); i++) {
        const row = await rows.nth(i).boundingBox();
        if (row && box && box.y >= row.y - 2 && box.y < row.y + row.height - 2) {
          return (await rows.nth(i).innerText()).replace(/\u00a0/g, ' ');
        }
      }
      return null;
    };
    const squiggled = [];
    const marks = cells.nth(1).locator('.squiggly-error');
    for (let i = 0; i < await marks.count(); i++) squiggled.push(await lineOf(marks.nth(i)));
    assert.ok(squiggled.some((line) => line && line.startsWith('y.mul_(2)')), `squiggled lines: ${JSON.stringify(squiggled)}`);
    assert.equal(await cells.nth(0).locator('.squiggly-error').count(), 0, 'nothing in the first cell');
    lap(`error squiggle in code cell 2 on: ${JSON.stringify(squiggled)}`);
    lap(`screenshot ${await shot('notebook-run.png')}`);
    await page.keyboard.press('Control+W');
  });
});

test('an interpreter without inplace-lsp: one notification naming it, then Choose interpreter', async (t) => {
  await step(t, 'no-server', async () => {
    const other = path.join(run, NO_SERVER_WS);
    const bare = `${path.join(run, 'bare', 'bin', 'python')} -E`;
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(other)}`);
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: NO_SERVER_FILE });
    await row.waitFor({ timeout: 90000 });
    await row.click();
    await page.locator('.monaco-editor .view-lines').first().waitFor({ timeout: 30000 });
    lap(`${NO_SERVER_WS}/${NO_SERVER_FILE} open`);

    const expected = `inplace-lsp is not installed in ${bare} (the inplaceLsp.interpreter setting).`;
    const toasts = page.locator('.notifications-toasts .notification-toast');
    const toast = toasts.filter({ hasText: expected }).first();
    await toast.waitFor({ timeout: 60000 });
    const buttons = (await toast.locator('.monaco-button').allInnerTexts()).map((b) => b.trim()).filter(Boolean);
    lap(`notification: ${(await toast.locator('.notification-list-item-message').innerText()).trim()} [${buttons.join(' | ')}]`);
    assert.deepEqual(buttons, ['Install inplace-lsp into it', 'Choose interpreter']);
    const status = page.locator('.statusbar-item', { hasText: 'inplace-lsp: not installed' }).first();
    await status.waitFor({ timeout: 10000 });
    // (the status item's tooltip is its aria-label's second part)
    const label = await status.locator('a').first().getAttribute('aria-label');
    lap(`status item: ${(await status.innerText()).trim()} (${label})`);
    // No language client was started: none of its generic toasts follow ("couldn't create
    // connection", "connection got closed", "server crashed").
    await new Promise((r) => setTimeout(r, 3000));
    const all = (await toasts.allInnerTexts()).map((x) => x.replace(/\s+/g, ' ').trim());
    assert.equal(all.length, 1, `one notification, not: ${JSON.stringify(all)}`);
    lap(`screenshot ${await shot('no-server.png')}`);

    // Choose interpreter: a file picker; the chosen one becomes the workspace's setting, and
    // the server starts with it.
    await toast.locator('.monaco-button', { hasText: 'Choose interpreter' }).click();
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 10000 });
    // It fills in the workspace's folder, and lists it, asynchronously: type over it after.
    await page.waitForFunction(() => document.querySelector('.quick-input-widget input')?.value.endsWith('/'));
    await page.locator('.quick-input-list .monaco-list-row', { hasText: NO_SERVER_FILE }).first().waitFor({ timeout: 10000 });
    lap(`file picker open at ${await input.inputValue()}`);
    await input.press('Control+A');
    await page.keyboard.insertText(PYTHON);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'activate' }).first().waitFor({ timeout: 10000 });
    assert.equal(await input.inputValue(), PYTHON);
    lap(`typed ${PYTHON}`);
    await page.locator('.quick-input-widget .monaco-button', { hasText: 'Use this interpreter' }).click();
    const settingsJson = path.join(other, '.vscode', 'settings.json');
    const end = Date.now() + 15000;
    for (let chosen; JSON.stringify(chosen) !== JSON.stringify([PYTHON]);) {
      assert.ok(Date.now() < end, `inplaceLsp.interpreter not set to ${PYTHON}: ${fs.readFileSync(settingsJson, 'utf8')}`);
      await new Promise((r) => setTimeout(r, 100));
      try { chosen = JSON.parse(fs.readFileSync(settingsJson, 'utf8'))['inplaceLsp.interpreter']; } catch { /* being written */ }
    }
    lap(`${NO_SERVER_WS}/.vscode/settings.json: "inplaceLsp.interpreter": ["${PYTHON}"]`);
    await page.locator('.statusbar-item', { hasText: /^\W*inplace-lsp$/ }).first().waitFor({ timeout: 60000 });
    await page.locator('.monaco-editor .squiggly-warning, .monaco-editor .squiggly-error').first().waitFor({ timeout: 60000 });
    lap('the server runs: status item idle, the IPL001 squiggle shows');
    lap(`screenshot ${await shot('no-server-chosen.png')}`);
  });
});

test('Install inplace-lsp into it: pip installs this checkout there, and the server starts', async (t) => {
  if (!PIP) {
    t.skip('INPLACE_LSP_E2E_PIP=1 not set (pip needs an index for the dependencies)');
    return;
  }
  await step(t, 'install', async () => {
    const third = path.join(run, INSTALL_WS);
    const venvPython = path.join(run, 'pip-venv', 'bin', 'python');
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(third)}`);
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: NO_SERVER_FILE });
    await row.waitFor({ timeout: 90000 });
    await row.click();
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: `not installed in ${venvPython} -E` }).first();
    await toast.waitFor({ timeout: 60000 });
    await toast.locator('.monaco-button', { hasText: 'Install inplace-lsp into it' }).click();
    // The checkout the .vsix was packaged from (dist/source.json): this repository.
    const progress = page.locator('.notifications-toasts .notification-toast', { hasText: `-m pip install ${repo}` }).first();
    await progress.waitFor({ timeout: 10000 });
    lap(`progress: ${(await progress.innerText()).replace(/\s+/g, ' ').trim()}`);
    await page.locator('.statusbar-item', { hasText: /^\W*inplace-lsp$/ }).first().waitFor({ timeout: 300000 });
    await page.locator('.monaco-editor .squiggly-warning, .monaco-editor .squiggly-error').first().waitFor({ timeout: 60000 });
    const installed = execFileSync(venvPython, ['-E', '-c', 'import inplace_lsp; print(inplace_lsp.__file__)'], { encoding: 'utf8' }).trim();
    assert.ok(installed.startsWith(path.join(run, 'pip-venv')), `inplace_lsp imported from ${installed}`);
    lap(`installed into the venv (${path.relative(run, installed)}); the server runs and the squiggle shows`);
    lap(`screenshot ${await shot('installed.png')}`);
  });
});
