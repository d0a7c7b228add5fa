/**
 * The language server's lifecycle: start (`<python> -m inplace_lsp serve` on stdio), stop,
 * restart; the documents it sees (Python files and notebook cells); the settings it gets.
 */
import * as os from 'os';
import * as vscode from 'vscode';
import {
    LanguageClient,
    type LanguageClientOptions,
    type ServerOptions,
    RevealOutputChannelOn,
} from 'vscode-languageclient/node';
import { EXTENSION_NAME, ServerCommands } from './constants';
import { findInterpreter, type Interpreter, serverCommand } from './python';
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

export class Server implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private starting: Promise<void> | undefined;
    interpreter: Interpreter | undefined;

    constructor(
        private readonly log: vscode.LogOutputChannel,
        private readonly status: StatusItem,
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
        const { command, args } = serverCommand(this.interpreter);
        this.log.info(`Starting server: ${[command, ...args].join(' ')} (interpreter from ${this.interpreter.source})`);
        const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
        // stdio, but no `transport`: with TransportKind.stdio the client appends `--stdio` to
        // the arguments, which `inplace_lsp serve` rejects.
        const serverOptions: ServerOptions = {
            command,
            args,
            options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
        };
        const clientOptions: LanguageClientOptions = {
            documentSelector: DOCUMENT_SELECTOR,
            outputChannel: this.log,
            traceOutputChannel: this.log,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: serverSettings(settings),
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
                                ? (serverSettings(getSettings(folderOf(item.scopeUri))) satisfies IServerSettings)
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
            this.status.stopped(`${command} -m inplace_lsp serve failed (is inplace-lsp installed for it?)`);
            void vscode.window
                .showErrorMessage(
                    `${EXTENSION_NAME}: the server did not start with ${command}. Is inplace-lsp installed for that interpreter? Set "inplaceLsp.interpreter" to choose another.`,
                    'Show logs',
                )
                .then((choice) => {
                    if (choice) {
                        this.log.show();
                    }
                });
        }
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
