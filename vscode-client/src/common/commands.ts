/**
 * The contributed commands: each one calls a server command or a VS Code command and turns a
 * failure into an error message.
 */
import * as vscode from 'vscode';
import { Commands, EXTENSION_NAME, FIX_ALL_KIND, ServerCommands } from './constants';
import type { Server } from './server';

function describe(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}

/** Runs `action`, showing an error message (with a way to the logs) when it fails. */
async function reporting(what: string, log: vscode.LogOutputChannel, action: () => Promise<unknown>): Promise<void> {
    try {
        await action();
    } catch (error) {
        log.error(`${what}: ${describe(error)}`);
        const choice = await vscode.window.showErrorMessage(`${EXTENSION_NAME}: ${what} failed: ${describe(error)}`, 'Show logs');
        if (choice) {
            log.show();
        }
    }
}

function requireServer(server: Server): void {
    if (!server.running) {
        throw new Error('the server is not running (see "Inplace LSP: Show logs")');
    }
}

function pythonEditor(): vscode.TextEditor {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
        throw new Error('open a Python file first');
    }
    return editor;
}

export function registerCommands(server: Server, log: vscode.LogOutputChannel): vscode.Disposable[] {
    return [
        vscode.commands.registerCommand(Commands.verifyAtCursor, () =>
            reporting('Verify', log, async () => {
                requireServer(server);
                // Files, unsaved buffers and notebook cells: the server runs the buffer's text.
                const editor = pythonEditor();
                const { line, character } = editor.selection.active;
                // Through VS Code's command so the status bar middleware sees it.
                await vscode.commands.executeCommand(ServerCommands.verify, editor.document.uri.toString(), {
                    line,
                    character,
                });
            }),
        ),
        vscode.commands.registerCommand(Commands.fixAll, () =>
            reporting('Fix all', log, async () => {
                requireServer(server);
                pythonEditor();
                await vscode.commands.executeCommand('editor.action.codeAction', {
                    kind: FIX_ALL_KIND,
                    apply: 'first',
                });
            }),
        ),
        vscode.commands.registerCommand(Commands.showDebugInfo, () =>
            reporting('Show debug info', log, async () => {
                requireServer(server);
                const uri = vscode.window.activeTextEditor?.document.uri.toString();
                const info: unknown = await vscode.commands.executeCommand(
                    ServerCommands.showDebugInfo,
                    ...(uri ? [uri] : []),
                );
                const interpreter = server.interpreter;
                const report = {
                    client: {
                        vscode: vscode.version,
                        serverInterpreter: interpreter?.command,
                        interpreterSource: interpreter?.source,
                    },
                    server: info,
                };
                log.info(`Debug info:\n${JSON.stringify(report, null, 2)}`);
                log.show(true);
            }),
        ),
        vscode.commands.registerCommand(Commands.restart, () =>
            reporting('Restart server', log, async () => {
                await server.restart();
            }),
        ),
        vscode.commands.registerCommand(Commands.showLogs, () => {
            log.show();
        }),
    ];
}
