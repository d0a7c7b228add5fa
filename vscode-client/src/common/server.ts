/**
 * The language server's lifecycle: start (`<python> -m inplace_lsp serve` on stdio, once the
 * interpreter is known to import it), stop, restart; the documents it sees (Python files and
 * notebook cells); the settings it gets; and the one notification when the interpreter has no
 * server, with its two ways out (install it there, choose another interpreter).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
    LanguageClient,
    type LanguageClientOptions,
    type ServerOptions,
    RevealOutputChannelOn,
} from 'vscode-languageclient/node';
import { Commands, EXTENSION_NAME, ServerCommands } from './constants';
import {
    CHOOSE_ACTION,
    checkServer,
    chooseBundled,
    INSTALL_ACTION,
    installCommand,
    installFailure,
    installSource,
    interpreterLabel,
    LOGS_ACTION,
    type Preflight,
    problemMessage,
    processRunner,
} from './preflight';
import { findInterpreter, type Interpreter, interpreterPath, pythonExtensionApi, serverCommand } from './python';
import { resolveSettings, SECTION, serverSettings, type ISettings, type IServerSettings } from './settings';
import type { StatusItem, VerifyResult } from './status';

/** Python files on disk and unsaved, and Python cells of Jupyter notebooks. */
export const DOCUMENT_SELECTOR = [
    { scheme: 'file', language: 'python' },
    { scheme: 'untitled', language: 'python' },
    { scheme: 'vscode-notebook-cell', language: 'python' },
    { notebook: { notebookType: 'jupyter-notebook' }, language: 'python' },
];

/** The settings of a folder (the first workspace folder when none is given). */
export function getSettings(folder?: vscode.WorkspaceFolder): ISettings {
    const scope = folder ?? vscode.workspace.workspaceFolders?.[0];
    return resolveSettings(vscode.workspace.getConfiguration(SECTION, scope?.uri), {
        workspaceFolder: scope?.uri.fsPath,
        userHome: os.homedir(),
        env: process.env,
    });
}

function folderOf(scopeUri: string | undefined): vscode.WorkspaceFolder | undefined {
    if (!scopeUri) {
        return undefined;
    }
    try {
        return vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(scopeUri));
    } catch {
        return undefined;
    }
}

/** The import check's and pip's limits: a cold interpreter on a slow disk, a slow network. */
const CHECK_TIMEOUT_MS = 30_000;
const INSTALL_TIMEOUT_MS = 600_000;

/** The bundled server's launcher, when this build of the extension carries one
 *  (scripts/bundle_server.py made `bundled/libs.zip` and its manifest). */
export function bundledServer(extensionPath: string): string | undefined {
    const bundled = path.join(extensionPath, 'bundled');
    const script = path.join(bundled, 'tool', 'serve.py');
    const carried = [script, path.join(bundled, 'libs.zip'), path.join(bundled, 'manifest.json')];
    return carried.every((file) => fs.existsSync(file)) ? script : undefined;
}

function readOrUndefined(file: string): string | undefined {
    try {
        return fs.readFileSync(file, 'utf8');
    } catch {
        return undefined;
    }
}

export class Server implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private starting: Promise<void> | undefined;
    /** Why the last start did not happen (the interpreter has no server), for the status item. */
    private problem: { text: string; actions: string[] } | undefined;
    interpreter: Interpreter | undefined;
    /** The interpreter verify runs the user's code in, when it is not the server's (the
     *  bundled server runs in a Python from the PATH because the chosen one cannot). */
    private verifyPython: string | undefined;

    constructor(
        private readonly log: vscode.LogOutputChannel,
        private readonly status: StatusItem,
        private readonly extensionPath: string,
    ) {}

    get running(): LanguageClient | undefined {
        return this.client?.isRunning() ? this.client : undefined;
    }

    /** Stops the running server, if any, and starts a new one. */
    async restart(): Promise<void> {
        // Restarts requested while one is in progress queue behind it rather than race it.
        const previous = this.starting ?? Promise.resolve();
        const next = previous.then(async () => {
            await this.stop();
            await this.start();
        });
        this.starting = next.finally(() => {
            if (this.starting === next) {
                this.starting = undefined;
            }
        });
        return next;
    }

    private async start(): Promise<void> {
        const settings = getSettings();
        this.interpreter = await findInterpreter(
            settings.interpreter,
            vscode.extensions,
            vscode.workspace.workspaceFolders?.[0]?.uri,
        );
        const chosen = this.interpreter;
        const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
        const env = { ...process.env, PYTHONUNBUFFERED: '1' };
        const runner = processRunner({ cwd, env, timeoutMs: CHECK_TIMEOUT_MS });
        // Before the client: a server that cannot start makes the client show several
        // generic errors of its own, and this one would come last.
        const bundled = settings.importStrategy === 'useBundled' ? bundledServer(this.extensionPath) : undefined;
        if (settings.importStrategy === 'useBundled' && !bundled) {
            this.log.warn("This build of the extension bundles no server: using the interpreter's own inplace-lsp");
        }
        let interpreter = chosen;
        let command: string;
        let args: string[];
        let location: string;
        this.verifyPython = undefined;
        if (bundled) {
            const choice = await chooseBundled(chosen, bundled, runner);
            if (choice.result.kind !== 'ok') {
                this.cannotStart(choice.result, chosen, true);
                return;
            }
            interpreter = choice.interpreter;
            location = choice.result.location;
            const [python = 'python3', ...prefix] = interpreter.command;
            command = python;
            args = [...prefix, bundled, 'serve'];
            if (choice.instead) {
                const why = `${interpreterPath(chosen)} cannot run it: ${choice.instead.detail}`;
                this.log.warn(`The bundled server runs in ${python}, found on the PATH (${why})`);
                // Verify still runs the user's code where their torch is.
                if (choice.instead.kind !== 'no interpreter') {
                    this.verifyPython = interpreterPath(chosen);
                }
            }
        } else {
            const checked = await checkServer(chosen, runner);
            if (checked.kind !== 'ok') {
                this.cannotStart(checked, chosen);
                return;
            }
            location = checked.location;
            ({ command, args } = serverCommand(chosen));
        }
        this.interpreter = interpreter;
        this.problem = undefined;
        this.log.info(`Starting server: ${[command, ...args].join(' ')} (interpreter from ${interpreter.source}; inplace_lsp from ${location})`);
        // stdio, but no `transport`: with TransportKind.stdio the client appends `--stdio` to
        // the arguments, which `inplace_lsp serve` rejects.
        const serverOptions: ServerOptions = { command, args, options: { cwd, env } };
        const clientOptions: LanguageClientOptions = {
            documentSelector: DOCUMENT_SELECTOR,
            outputChannel: this.log,
            traceOutputChannel: this.log,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: this.sent(settings),
            middleware: {
                workspace: {
                    // A change under our section restarts the server (extension.ts): the
                    // notification would only reach the server being stopped, and fail there.
                    didChangeConfiguration: () => Promise.resolve(),
                    // The server pulls the `inplaceLsp` section: answer with the resolved
                    // settings (variables substituted, `interpreter` left out).
                    configuration: async (params, token, next) => {
                        const values = await next(params, token);
                        if (!Array.isArray(values)) {
                            return values;
                        }
                        return values.map((value: unknown, i): unknown => {
                            const item = params.items[i];
                            return item?.section === SECTION
                                ? (this.sent(getSettings(folderOf(item.scopeUri))) satisfies IServerSettings)
                                : value;
                        });
                    },
                },
                // Every verify (our command, a code lens, another extension) shows in the status bar.
                executeCommand: async (command, args, next) => {
                    if (command !== ServerCommands.verify) {
                        return (await next(command, args)) as unknown;
                    }
                    const finish = this.status.busy();
                    try {
                        const result = (await next(command, args)) as VerifyResult | undefined;
                        finish(result);
                        return result;
                    } catch (error) {
                        finish(undefined, error);
                        throw error;
                    }
                },
            },
        };
        const client = new LanguageClient('inplaceLsp', EXTENSION_NAME, serverOptions, clientOptions);
        this.client = client;
        try {
            await client.start();
            this.status.idle();
        } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            this.log.error(`Server failed to start: ${message}`);
            this.status.stopped('failed to start', `${command} -m inplace_lsp serve failed: ${message}`, Commands.showLogs);
            void vscode.window
                .showErrorMessage(
                    `${EXTENSION_NAME}: the server did not start with ${interpreterLabel(interpreter)}: ${message}. Set "inplaceLsp.interpreter" to choose another.`,
                    LOGS_ACTION,
                )
                .then((choice) => {
                    if (choice) {
                        this.log.show();
                    }
                });
        }
    }

    /** The settings the server gets: verify's interpreter is the user's, also when the server
     *  runs in another (unless verify.python names one). */
    private sent(settings: ISettings): IServerSettings {
        const sent = serverSettings(settings);
        if (this.verifyPython && sent.verify.python === null) {
            return { ...sent, verify: { ...sent.verify, python: this.verifyPython } };
        }
        return sent;
    }

    /** The interpreter cannot run the server: one error notification that names it, the
     *  status item saying the same, and no language client. */
    private cannotStart(problem: Exclude<Preflight, { kind: 'ok' }>, interpreter: Interpreter, bundled = false): void {
        const message = problemMessage(problem, interpreter, bundled);
        this.log.error(`${message.text} (${interpreterLabel(interpreter)}: ${problem.detail})`);
        this.problem = { text: message.text, actions: message.actions };
        this.status.stopped(message.short, message.text, Commands.showProblem);
        void this.showProblem();
    }

    /** The notification of the last failed start (the status item's command); the logs when
     *  the server runs. */
    async showProblem(): Promise<void> {
        const problem = this.problem;
        if (!problem) {
            this.log.show();
            return;
        }
        const choice = await vscode.window.showErrorMessage(`${EXTENSION_NAME}: ${problem.text}`, ...problem.actions);
        if (choice === INSTALL_ACTION) {
            await this.install();
        } else if (choice === CHOOSE_ACTION) {
            await this.chooseInterpreter();
        } else if (choice === LOGS_ACTION) {
            this.log.show();
        }
    }

    /** `<interpreter> -m pip install <this extension's checkout, or the package>`, then a
     *  restart; pip's output goes to the log. */
    private async install(): Promise<void> {
        const interpreter = this.interpreter;
        if (!interpreter) {
            return;
        }
        const source = installSource(this.extensionPath, readOrUndefined);
        const { command, args } = installCommand(interpreter, source);
        const line = [command, ...args].join(' ');
        this.log.info(`Running: ${line}`);
        const run = processRunner({
            cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir(),
            env: { ...process.env, PYTHONUNBUFFERED: '1' },
            timeoutMs: INSTALL_TIMEOUT_MS,
            onOutput: (text) => this.log.info(text.trimEnd()),
        });
        const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `${EXTENSION_NAME}: ${line}` },
            () => run(command, args),
        );
        if (!result.error && result.code === 0) {
            this.log.info(`Installed ${source} into ${interpreterLabel(interpreter)}; restarting the server`);
            await this.restart();
            return;
        }
        const why = installFailure(result);
        this.log.error(`${line} failed: ${why}`);
        const choice = await vscode.window.showErrorMessage(
            `${EXTENSION_NAME}: installing inplace-lsp into ${interpreterLabel(interpreter)} failed: ${why}`,
            CHOOSE_ACTION,
            LOGS_ACTION,
        );
        if (choice === CHOOSE_ACTION) {
            await this.chooseInterpreter();
        } else if (choice === LOGS_ACTION) {
            this.log.show();
        }
    }

    /**
     * The Python extension's interpreter picker when it chooses (no `inplaceLsp.interpreter`
     * set); else a file picker whose choice becomes the setting, where it is set (the folder,
     * the workspace, the user), else the workspace's. Either change restarts the server.
     */
    private async chooseInterpreter(): Promise<void> {
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (getSettings(folder).interpreter.every((part) => part.trim() === '')) {
            const python = await pythonExtensionApi(vscode.extensions);
            if (python?.environments) {
                await vscode.commands.executeCommand('python.setInterpreter');
                return;
            }
        }
        const picked = await vscode.window.showOpenDialog({
            title: 'The Python interpreter that runs inplace-lsp',
            openLabel: 'Use this interpreter',
            canSelectFiles: true,
            canSelectFolders: false,
            canSelectMany: false,
        });
        const file = picked?.[0]?.fsPath;
        if (!file) {
            return;
        }
        const config = vscode.workspace.getConfiguration(SECTION, folder?.uri);
        const where = config.inspect('interpreter');
        let target = vscode.ConfigurationTarget.Global;
        if (where?.workspaceFolderValue !== undefined) {
            target = vscode.ConfigurationTarget.WorkspaceFolder;
        } else if (where?.workspaceValue !== undefined || (where?.globalValue === undefined && folder && vscode.workspace.isTrusted)) {
            target = vscode.ConfigurationTarget.Workspace;
        }
        this.log.info(`inplaceLsp.interpreter set to ${file}`);
        await config.update('interpreter', [file], target);
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (!client) {
            return;
        }
        try {
            if (client.needsStop()) {
                await client.stop();
            }
        } catch (error) {
            this.log.warn(`Stopping the server: ${error instanceof Error ? error.message : String(error)}`);
        }
        try {
            await client.dispose();
        } catch {
            // already stopped
        }
    }

    dispose(): void {
        void this.stop();
    }
}
