/**
 * Entry point: activate starts the server and wires commands and setting changes; deactivate
 * stops the server.
 */
import * as vscode from 'vscode';
import { registerCommands } from './common/commands';
import { Commands, EXTENSION_NAME } from './common/constants';
import { pythonExtensionApi } from './common/python';
import { getSettings, Server } from './common/server';
import { needsRestart } from './common/settings';
import { StatusItem } from './common/status';

let server: Server | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const log = vscode.window.createOutputChannel(EXTENSION_NAME, { log: true });
    const status = new StatusItem(Commands.showLogs);
    server = new Server(log, status, context.extensionPath);
    const restart = (why: string): void => {
        log.info(`Restarting the server: ${why}`);
        void server?.restart();
    };
    context.subscriptions.push(
        log,
        status,
        server,
        ...registerCommands(server, log),
        vscode.commands.registerCommand(Commands.showProblem, () => server?.showProblem()),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (needsRestart(event)) {
                restart('an inplaceLsp setting changed');
            }
        }),
        vscode.workspace.onDidGrantWorkspaceTrust(() => restart('the workspace is now trusted')),
    );
    const python = await pythonExtensionApi(vscode.extensions);
    const onEnvironment = python?.environments?.onDidChangeActiveEnvironmentPath;
    if (onEnvironment) {
        context.subscriptions.push(
            onEnvironment(() => {
                // An inplaceLsp.interpreter setting wins: the server's interpreter is unchanged.
                if (getSettings().interpreter.every((part) => part.trim() === '')) {
                    restart('the Python extension changed the interpreter');
                }
            }),
        );
    }
    await server.restart();
}

export async function deactivate(): Promise<void> {
    await server?.stop();
    server = undefined;
}
