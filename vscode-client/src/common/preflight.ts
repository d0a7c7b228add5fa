/**
 * Before the language client starts: whether the chosen interpreter can import the server
 * (`<python> -c "import inplace_lsp"`), what to tell the user when it cannot, and the pip
 * command that installs the server into it from where this extension came from. Pure
 * functions over an injected process runner and file reader, so they test without VS Code.
 */
import { spawn } from 'child_process';
import * as path from 'path';
import { describeSource, type Interpreter, PATH_CANDIDATES } from './python';

/** The package's name (as pip knows it) and the module the server runs as. */
export const PACKAGE_NAME = 'inplace-lsp';
export const MODULE_NAME = 'inplace_lsp';
export const INSTALL_ACTION = 'Install inplace-lsp into it';
export const CHOOSE_ACTION = 'Choose interpreter';
export const LOGS_ACTION = 'Show logs';

/** What a finished child process left. `error` is set when it could not be started. */
export interface ProcessResult {
    code: number | null;
    stdout: string;
    stderr: string;
    error?: { code?: string; message: string };
}

export type Runner = (command: string, args: readonly string[]) => Promise<ProcessResult>;

/** Prints where the module was imported from (logged), so a wrong copy shows. */
const CHECK_SCRIPT = `import sys, ${MODULE_NAME}; sys.stdout.write(${MODULE_NAME}.__file__ or '')`;

export function checkCommand(interpreter: Interpreter): { command: string; args: string[] } {
    const [command = 'python3', ...prefix] = interpreter.command;
    return { command, args: [...prefix, '-c', CHECK_SCRIPT] };
}

export type Preflight =
    | { kind: 'ok'; location: string }
    /** the interpreter does not exist or cannot be run */
    | { kind: 'no interpreter'; detail: string }
    /** it runs, and has no inplace_lsp */
    | { kind: 'missing'; detail: string }
    /** it has one, whose import fails (a missing dependency, a syntax error...) */
    | { kind: 'broken'; detail: string }
    /** the bundled server has no build for its Python (too old, too new) */
    | { kind: 'unsupported'; detail: string };

/** serve.py's exit code when nothing is bundled for the interpreter's Python. */
export const UNSUPPORTED_EXIT = 3;

function lastLine(text: string): string {
    const lines = text.split(/\r\n|\r|\n/).filter((line) => line.trim() !== '');
    return lines[lines.length - 1]?.trim() ?? '';
}

/** Runs a check (a command that prints where inplace_lsp is imported from) and sorts its
 *  outcome; `failed` names a failure from its exit code and last line of stderr. */
async function runCheck(
    check: { command: string; args: string[] },
    run: Runner,
    failed: (code: number | null, detail: string) => Exclude<Preflight, { kind: 'ok' | 'no interpreter' }>,
): Promise<Preflight> {
    const result = await run(check.command, check.args);
    if (result.error) {
        return { kind: 'no interpreter', detail: result.error.message };
    }
    if (result.code === 0) {
        return { kind: 'ok', location: result.stdout.trim() };
    }
    return failed(result.code, lastLine(result.stderr) || `exit code ${String(result.code)}`);
}

/** Runs the import check and sorts its outcome. */
export async function checkServer(interpreter: Interpreter, run: Runner): Promise<Preflight> {
    // "No module named 'inplace_lsp'", not "No module named 'pygls'" raised inside it.
    const missing = new RegExp(`No module named '?${MODULE_NAME}'?(\\s|$)`);
    return runCheck(checkCommand(interpreter), run, (_, detail) => ({
        kind: missing.test(detail) ? 'missing' : 'broken',
        detail,
    }));
}

/** The bundled server's own check: `<python> <bundled>/tool/serve.py --where`. */
export function bundledCheckCommand(interpreter: Interpreter, script: string): { command: string; args: string[] } {
    const [command = 'python3', ...prefix] = interpreter.command;
    return { command, args: [...prefix, script, '--where'] };
}

/** Whether the interpreter runs the bundled server (`script` is its serve.py). */
export async function checkBundled(interpreter: Interpreter, script: string, run: Runner): Promise<Preflight> {
    return runCheck(bundledCheckCommand(interpreter, script), run, (code, detail) => ({
        kind: code === UNSUPPORTED_EXIT ? 'unsupported' : 'broken',
        detail,
    }));
}

/** The interpreter that runs the bundled server, and what its check said. */
export interface BundledChoice {
    interpreter: Interpreter;
    result: Preflight;
    /** what the chosen interpreter said, when a Python on the PATH runs the server instead */
    instead?: Exclude<Preflight, { kind: 'ok' }>;
}

/**
 * The chosen interpreter when it can run the bundled server; else (it is too old, missing,
 * or the bundled native code does not load in it) the first Python on the PATH that can.
 * When none can, the chosen one with its problem.
 */
export async function chooseBundled(
    interpreter: Interpreter,
    script: string,
    run: Runner,
    candidates: readonly string[] = PATH_CANDIDATES,
): Promise<BundledChoice> {
    const first = await checkBundled(interpreter, script, run);
    if (first.kind === 'ok') {
        return { interpreter, result: first };
    }
    const tried = new Set([interpreter.command[0]]);
    for (const candidate of candidates) {
        if (tried.has(candidate)) {
            continue;
        }
        tried.add(candidate);
        const other: Interpreter = { command: [candidate], source: 'path' };
        const result = await checkBundled(other, script, run);
        if (result.kind === 'ok') {
            return { interpreter: other, result, instead: first };
        }
    }
    return { interpreter, result: first };
}

/** The interpreter as the user would type it (its arguments included). */
export function interpreterLabel(interpreter: Interpreter): string {
    return interpreter.command.join(' ');
}

/** The one notification for a failed check: its text and its buttons. `bundled`: the
 *  check was the bundled server's (installing into the interpreter would not change it). */
export function problemMessage(
    problem: Exclude<Preflight, { kind: 'ok' }>,
    interpreter: Interpreter,
    bundled = false,
): {
    text: string;
    /** the status item's text */
    short: string;
    actions: string[];
} {
    const who = `${interpreterLabel(interpreter)} (${describeSource(interpreter.source)})`;
    if (bundled && problem.kind === 'broken') {
        return {
            text: `The bundled inplace-lsp does not import in ${who}: ${problem.detail}. Choose another interpreter, or set "inplaceLsp.importStrategy" to "fromEnvironment" to use the interpreter's own inplace-lsp.`,
            short: 'does not import',
            actions: [CHOOSE_ACTION, LOGS_ACTION],
        };
    }
    switch (problem.kind) {
        case 'missing':
            return {
                text: `inplace-lsp is not installed in ${who}. Install it there, or choose another interpreter.`,
                short: 'not installed',
                actions: [INSTALL_ACTION, CHOOSE_ACTION],
            };
        case 'no interpreter':
            return {
                text: `The interpreter ${who} could not be started: ${problem.detail}. Choose another interpreter.`,
                short: 'no interpreter',
                actions: [CHOOSE_ACTION, LOGS_ACTION],
            };
        case 'broken':
            return {
                text: `inplace-lsp does not import in ${who}: ${problem.detail}`,
                short: 'does not import',
                actions: [INSTALL_ACTION, CHOOSE_ACTION, LOGS_ACTION],
            };
        case 'unsupported':
            return {
                text: `The bundled inplace-lsp cannot run in ${who}, nor in any Python on the PATH: ${problem.detail}. Choose another interpreter.`,
                short: 'unsupported Python',
                actions: [CHOOSE_ACTION, LOGS_ACTION],
            };
    }
}

/** The slice of the file system `installSource` reads. */
export type ReadFile = (file: string) => string | undefined;

/** Whether `dir` is a checkout of this project: its pyproject.toml names the package and the
 *  package's sources are there. */
export function isCheckout(dir: string, read: ReadFile): boolean {
    const pyproject = read(path.join(dir, 'pyproject.toml'));
    if (pyproject === undefined || read(path.join(dir, MODULE_NAME, '__init__.py')) === undefined) {
        return false;
    }
    return new RegExp(`^\\s*name\\s*=\\s*["']${PACKAGE_NAME}["']`, 'm').test(pyproject);
}

/**
 * What pip installs: the checkout this extension came from when it is on this machine (the
 * extension runs from `<checkout>/vscode-client` in development, or was packaged from a
 * checkout that `dist/source.json` names), else the package by name.
 */
export function installSource(extensionPath: string, read: ReadFile): string {
    const candidates = [path.dirname(extensionPath)];
    const recorded = read(path.join(extensionPath, 'dist', 'source.json'));
    if (recorded !== undefined) {
        try {
            const checkout = (JSON.parse(recorded) as { checkout?: unknown }).checkout;
            if (typeof checkout === 'string' && path.isAbsolute(checkout)) {
                candidates.push(checkout);
            }
        } catch {
            // unreadable: install by name
        }
    }
    return candidates.find((dir) => isCheckout(dir, read)) ?? PACKAGE_NAME;
}

/** `<python> -m pip install <source>`, with the interpreter's own arguments. */
export function installCommand(interpreter: Interpreter, source: string): { command: string; args: string[] } {
    const [command = 'python3', ...prefix] = interpreter.command;
    return { command, args: [...prefix, '-m', 'pip', 'install', source] };
}

/** Why an install failed, in one line. */
export function installFailure(result: ProcessResult): string {
    if (result.error) {
        return result.error.message;
    }
    const said = `${result.stderr}\n${result.stdout}`;
    if (/No module named '?pip'?/.test(said)) {
        return 'that interpreter has no pip';
    }
    if (/externally-managed-environment/.test(said)) {
        return 'that interpreter is managed by the system (PEP 668): choose a virtual environment';
    }
    return lastLine(result.stderr) || lastLine(result.stdout) || `exit code ${String(result.code)}`;
}

/** A Runner over child_process: output decoded as UTF-8, stopped after `timeoutMs`; each
 *  chunk of output also goes to `onOutput` (the log, for a pip run the user waits on). */
export function processRunner(options: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs: number;
    onOutput?: (text: string) => void;
}): Runner {
    return (command, args) =>
        new Promise((resolve) => {
            let stdout = '';
            let stderr = '';
            let settled = false;
            const finish = (result: ProcessResult): void => {
                if (!settled) {
                    settled = true;
                    clearTimeout(timer);
                    resolve(result);
                }
            };
            const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
            const timer = setTimeout(() => {
                child.kill();
                finish({ code: null, stdout, stderr, error: { code: 'ETIMEDOUT', message: `no answer within ${options.timeoutMs / 1000} s` } });
            }, options.timeoutMs);
            child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
                stdout += chunk;
                options.onOutput?.(chunk);
            });
            child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
                stderr += chunk;
                options.onOutput?.(chunk);
            });
            child.on('error', (error: NodeJS.ErrnoException) => {
                finish({ code: null, stdout, stderr, error: { code: error.code, message: error.message } });
            });
            child.on('close', (code) => finish({ code, stdout, stderr }));
        });
}
