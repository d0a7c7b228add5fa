/** The check before the client starts, its message, and the install command, without VS Code. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
    bundledCheckCommand,
    CHOOSE_ACTION,
    checkBundled,
    checkCommand,
    checkServer,
    chooseBundled,
    INSTALL_ACTION,
    installCommand,
    installFailure,
    installSource,
    PACKAGE_NAME,
    type ProcessResult,
    problemMessage,
    processRunner,
    type ReadFile,
    type Runner,
    UNSUPPORTED_EXIT,
} from '../src/common/preflight';
import type { Interpreter } from '../src/common/python';

const SETTING: Interpreter = { command: ['/opt/py/bin/python', '-X', 'utf8'], source: 'setting' };

function answering(result: Partial<ProcessResult>): { run: Runner; calls: string[][] } {
    const calls: string[][] = [];
    const run: Runner = (command, args) => {
        calls.push([command, ...args]);
        return Promise.resolve({ code: 0, stdout: '', stderr: '', ...result });
    };
    return { run, calls };
}

const NOT_INSTALLED = `Traceback (most recent call last):
  File "<string>", line 1, in <module>
ModuleNotFoundError: No module named 'inplace_lsp'
`;

describe('checkServer', () => {
    it('imports inplace_lsp with the interpreter and its arguments, before anything else', async () => {
        const { run, calls } = answering({ stdout: '/src/inplace_lsp/__init__.py' });
        assert.deepEqual(await checkServer(SETTING, run), { kind: 'ok', location: '/src/inplace_lsp/__init__.py' });
        assert.equal(calls.length, 1);
        const [command, ...args] = calls[0] ?? [];
        assert.equal(command, '/opt/py/bin/python');
        assert.deepEqual(args.slice(0, 3), ['-X', 'utf8', '-c']);
        assert.match(args[3] ?? '', /import sys, inplace_lsp/);
        assert.deepEqual(checkCommand(SETTING), { command, args });
    });

    it('tells a missing server from a missing interpreter and from a server that does not import', async () => {
        assert.deepEqual(await checkServer(SETTING, answering({ code: 1, stderr: NOT_INSTALLED }).run), {
            kind: 'missing',
            detail: "ModuleNotFoundError: No module named 'inplace_lsp'",
        });
        const enoent = { code: null, error: { code: 'ENOENT', message: 'spawn /opt/py/bin/python ENOENT' } };
        assert.equal((await checkServer(SETTING, answering(enoent).run)).kind, 'no interpreter');
        // inside the package: a dependency missing is not "inplace-lsp is not installed"
        const pygls = "ModuleNotFoundError: No module named 'pygls'";
        assert.deepEqual(await checkServer(SETTING, answering({ code: 1, stderr: `${pygls}\n` }).run), {
            kind: 'broken',
            detail: pygls,
        });
        const sub = "ModuleNotFoundError: No module named 'inplace_lsp.lsp'";
        assert.equal((await checkServer(SETTING, answering({ code: 1, stderr: sub }).run)).kind, 'broken');
        assert.deepEqual(await checkServer(SETTING, answering({ code: 3 }).run), { kind: 'broken', detail: 'exit code 3' });
    });

    it('finds a real python without inplace_lsp to be missing it', async (t) => {
        const python = ['/usr/bin/python3', '/usr/local/bin/python3'].find((p) => fs.existsSync(p));
        const env = { ...process.env };
        delete env.PYTHONPATH;
        if (!python || spawnSync(python, ['-c', 'import inplace_lsp'], { env }).status === 0) {
            t.skip('no python3 without inplace_lsp here');
            return;
        }
        const interpreter: Interpreter = { command: [python], source: 'default' };
        const found = await checkServer(interpreter, processRunner({ env, timeoutMs: 30_000 }));
        assert.equal(found.kind, 'missing', JSON.stringify(found));
        const none: Interpreter = { command: [path.join(os.tmpdir(), 'no-such-python')], source: 'setting' };
        assert.equal((await checkServer(none, processRunner({ env, timeoutMs: 30_000 }))).kind, 'no interpreter');
    });
});

describe('problemMessage', () => {
    it('names the interpreter and where it came from, with the two ways out', () => {
        const message = problemMessage({ kind: 'missing', detail: 'x' }, SETTING);
        assert.equal(
            message.text,
            'inplace-lsp is not installed in /opt/py/bin/python -X utf8 (the inplaceLsp.interpreter setting). Install it there, or choose another interpreter.',
        );
        assert.deepEqual(message.actions, [INSTALL_ACTION, CHOOSE_ACTION]);
        assert.equal(INSTALL_ACTION, 'Install inplace-lsp into it');
        assert.equal(CHOOSE_ACTION, 'Choose interpreter');
        assert.equal(message.short, 'not installed');
        const fromPython = problemMessage({ kind: 'missing', detail: 'x' }, { command: ['/venv/bin/python'], source: 'python extension' });
        assert.match(fromPython.text, /in \/venv\/bin\/python \(the Python extension's selected interpreter\)/);
    });

    it('offers no install into an interpreter that does not run', () => {
        const message = problemMessage({ kind: 'no interpreter', detail: 'spawn /x ENOENT' }, SETTING);
        assert.ok(!message.actions.includes(INSTALL_ACTION));
        assert.match(message.text, /could not be started: spawn \/x ENOENT/);
    });
});

/** A file system of `files` (path -> text). */
function files(entries: Record<string, string>): ReadFile {
    return (file) => entries[file];
}

const PYPROJECT = '[project]\nname = "inplace-lsp"\nversion = "0.1.0"\n';

describe('installSource', () => {
    it('is the checkout the extension runs from (development)', () => {
        const read = files({ '/src/repo/pyproject.toml': PYPROJECT, '/src/repo/inplace_lsp/__init__.py': '' });
        assert.equal(installSource('/src/repo/vscode-client', read), '/src/repo');
    });

    it('is the checkout it was packaged from, while that is still a checkout of inplace-lsp', () => {
        const ext = '/home/u/.vscode/extensions/inplace-lsp.inplace-lsp-0.1.0';
        const recorded = { [`${ext}/dist/source.json`]: '{"checkout": "/work/repo"}' };
        const there = files({ ...recorded, '/work/repo/pyproject.toml': PYPROJECT, '/work/repo/inplace_lsp/__init__.py': '' });
        assert.equal(installSource(ext, there), '/work/repo');
        assert.equal(installSource(ext, files(recorded)), PACKAGE_NAME); // moved or deleted since
        const other = files({ ...recorded, '/work/repo/pyproject.toml': '[project]\nname = "other"\n', '/work/repo/inplace_lsp/__init__.py': '' });
        assert.equal(installSource(ext, other), PACKAGE_NAME);
        assert.equal(installSource(ext, files({ [`${ext}/dist/source.json`]: 'not json' })), PACKAGE_NAME);
    });

    it('is the package by name otherwise', () => {
        assert.equal(installSource('/home/u/.vscode/extensions/inplace-lsp.inplace-lsp-0.1.0', files({})), 'inplace-lsp');
    });
});

describe('installCommand and installFailure', () => {
    it('runs pip of that interpreter, with its arguments', () => {
        assert.deepEqual(installCommand(SETTING, '/work/repo'), {
            command: '/opt/py/bin/python',
            args: ['-X', 'utf8', '-m', 'pip', 'install', '/work/repo'],
        });
    });

    it('says why pip failed in one line', () => {
        assert.equal(installFailure({ code: 1, stdout: '', stderr: '/x/python: No module named pip\n' }), 'that interpreter has no pip');
        assert.match(
            installFailure({ code: 1, stdout: '', stderr: 'error: externally-managed-environment\n\n× This environment is externally managed\nhint: See PEP 668' }),
            /PEP 668/,
        );
        assert.equal(installFailure({ code: 1, stdout: '', stderr: 'ERROR: No matching distribution found for inplace-lsp\n' }), 'ERROR: No matching distribution found for inplace-lsp');
        assert.equal(installFailure({ code: null, stdout: '', stderr: '', error: { message: 'no answer within 600 s' } }), 'no answer within 600 s');
    });
});

describe('processRunner', () => {
    it('collects the output and the exit code, and stops a process that hangs', async () => {
        const seen: string[] = [];
        const run = processRunner({ timeoutMs: 10_000, onOutput: (text) => seen.push(text) });
        const done = await run(process.execPath, ['-e', 'process.stdout.write("out"); process.stderr.write("err"); process.exit(3)']);
        assert.deepEqual(done, { code: 3, stdout: 'out', stderr: 'err' });
        assert.deepEqual(seen.sort(), ['err', 'out']);
        const hung = await processRunner({ timeoutMs: 200 })(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
        assert.equal(hung.error?.code, 'ETIMEDOUT');
    });
});

const SERVE = '/ext/bundled/tool/serve.py';
const TOO_OLD = 'inplace-lsp (bundled): Python 3.8 is not supported; the extension bundles the server for Python 3.10, 3.11';

/** A runner whose answer depends on the executable: `answers[command]`, else "not found". */
function byCommand(answers: Record<string, Partial<ProcessResult>>): { run: Runner; calls: string[][] } {
    const calls: string[][] = [];
    const run: Runner = (command, args) => {
        calls.push([command, ...args]);
        const answer = answers[command];
        if (!answer) {
            return Promise.resolve({ code: null, stdout: '', stderr: '', error: { code: 'ENOENT', message: `spawn ${command} ENOENT` } });
        }
        return Promise.resolve({ code: 0, stdout: '', stderr: '', ...answer });
    };
    return { run, calls };
}

describe('checkBundled', () => {
    it("runs the bundled serve.py's check with the interpreter and its arguments", async () => {
        const { run, calls } = answering({ stdout: '/ext/bundled/libs/common/inplace_lsp/__init__.py' });
        const result = await checkBundled(SETTING, SERVE, run);
        assert.deepEqual(result, { kind: 'ok', location: '/ext/bundled/libs/common/inplace_lsp/__init__.py' });
        assert.deepEqual(calls, [['/opt/py/bin/python', '-X', 'utf8', SERVE, '--where']]);
        assert.deepEqual(bundledCheckCommand(SETTING, SERVE), { command: '/opt/py/bin/python', args: ['-X', 'utf8', SERVE, '--where'] });
    });

    it('tells an unsupported Python from a bundle that does not load and from no interpreter', async () => {
        const unsupported = await checkBundled(SETTING, SERVE, answering({ code: UNSUPPORTED_EXIT, stderr: `${TOO_OLD}\n` }).run);
        assert.deepEqual(unsupported, { kind: 'unsupported', detail: TOO_OLD });
        const broken = await checkBundled(SETTING, SERVE, answering({ code: 1, stderr: 'ImportError: libcst/native.so: wrong ELF class\n' }).run);
        assert.deepEqual(broken, { kind: 'broken', detail: 'ImportError: libcst/native.so: wrong ELF class' });
        assert.equal((await checkBundled(SETTING, SERVE, byCommand({}).run)).kind, 'no interpreter');
    });
});

describe('chooseBundled', () => {
    it('keeps the chosen interpreter when it runs the bundled server, asking nothing else', async () => {
        const { run, calls } = byCommand({ '/opt/py/bin/python': { stdout: '/x/inplace_lsp/__init__.py' } });
        const choice = await chooseBundled(SETTING, SERVE, run);
        assert.deepEqual(choice.interpreter, SETTING);
        assert.equal(choice.result.kind, 'ok');
        assert.equal(choice.instead, undefined);
        assert.equal(calls.length, 1);
    });

    it('falls back to the newest Python on the PATH that runs it, saying why', async () => {
        const { run, calls } = byCommand({
            '/opt/py/bin/python': { code: UNSUPPORTED_EXIT, stderr: TOO_OLD },
            'python3.12': { code: UNSUPPORTED_EXIT, stderr: 'not bundled' },
            'python3.11': { stdout: '/x/inplace_lsp/__init__.py' },
            python3: { stdout: '/y/inplace_lsp/__init__.py' },
        });
        const choice = await chooseBundled(SETTING, SERVE, run, ['python3.13', 'python3.12', 'python3.11', 'python3']);
        assert.deepEqual(choice.interpreter, { command: ['python3.11'], source: 'path' });
        assert.deepEqual(choice.result, { kind: 'ok', location: '/x/inplace_lsp/__init__.py' });
        assert.deepEqual(choice.instead, { kind: 'unsupported', detail: TOO_OLD });
        assert.deepEqual(calls.map((c) => c[0]), ['/opt/py/bin/python', 'python3.13', 'python3.12', 'python3.11']);
    });

    it("keeps the chosen interpreter's problem when nothing on the PATH runs it either", async () => {
        const { run } = byCommand({ 'python3.9': { code: UNSUPPORTED_EXIT, stderr: 'too old' } });
        const choice = await chooseBundled(SETTING, SERVE, run, ['python3.9']);
        assert.deepEqual(choice.interpreter, SETTING);
        assert.equal(choice.result.kind, 'no interpreter');
        assert.equal(choice.instead, undefined);
    });

    it('offers no install for a bundle that does not load: installing would not change it', () => {
        const message = problemMessage({ kind: 'broken', detail: 'ImportError: x' }, SETTING, true);
        assert.deepEqual(message.actions, [CHOOSE_ACTION, 'Show logs']);
        assert.match(message.text, /The bundled inplace-lsp does not import in \/opt\/py\/bin\/python -X utf8/);
        assert.match(message.text, /"inplaceLsp.importStrategy" to "fromEnvironment"/);
        const unsupported = problemMessage({ kind: 'unsupported', detail: TOO_OLD }, SETTING, true);
        assert.equal(unsupported.short, 'unsupported Python');
        assert.match(unsupported.text, /nor in any Python on the PATH/);
    });
});
