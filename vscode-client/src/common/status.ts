/**
 * The status bar item: idle, busy while a verify runs, then the last verify's result.
 */
import * as vscode from 'vscode';

/** The fields of the server's verify result object shown here. */
export interface VerifyResult {
    status?: string;
    message?: string;
    target?: string;
}

/** Icon and short text for a verify result status (ok, failed, error, timeout, cancelled...). */
export function describeResult(result: VerifyResult | undefined): { icon: string; text: string } {
    const status = result?.status ?? 'unknown';
    if (status === 'ok') {
        return { icon: '$(pass)', text: 'verify ok' };
    }
    if (status === 'cancelled') {
        return { icon: '$(circle-slash)', text: 'verify cancelled' };
    }
    if (status === 'error' || status === 'timeout') {
        return { icon: '$(warning)', text: `verify ${status}` };
    }
    return { icon: '$(error)', text: `verify ${status}` };
}

function describeError(error: unknown): string {
    if (error instanceof Error) {
        return error.message;
    }
    return typeof error === 'string' ? error : JSON.stringify(error);
}

export class StatusItem implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private busyCount = 0;

    constructor(private readonly showLogsCommand: string) {
        this.item = vscode.window.createStatusBarItem('inplaceLsp.status', vscode.StatusBarAlignment.Right, 100);
        this.item.name = 'Inplace LSP';
        this.idle();
    }

    idle(): void {
        this.item.text = '$(beaker) inplace-lsp';
        this.item.tooltip = 'Inplace LSP: click for the logs';
        this.item.command = this.showLogsCommand;
        this.item.backgroundColor = undefined;
        this.item.show();
    }

    /** Not running: `short` in the status bar, `reason` in the tooltip, `command` on a click. */
    stopped(short: string, reason: string, command: string): void {
        this.item.text = `$(error) inplace-lsp: ${short}`;
        this.item.tooltip = `Inplace LSP is not running: ${reason}`;
        this.item.command = command;
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        this.item.show();
    }

    /** Marks a verify as running until the returned function is called with its result. */
    busy(): (result: VerifyResult | undefined, error?: unknown) => void {
        this.busyCount += 1;
        this.item.text = '$(sync~spin) inplace-lsp: verifying';
        this.item.tooltip = 'Inplace LSP: running your code to verify';
        this.item.backgroundColor = undefined;
        let done = false;
        return (result, error) => {
            if (done) {
                return;
            }
            done = true;
            this.busyCount -= 1;
            if (error !== undefined) {
                this.item.text = '$(error) inplace-lsp: verify failed to run';
                this.item.tooltip = `Inplace LSP: ${describeError(error)}`;
            } else if (this.busyCount === 0) {
                const { icon, text } = describeResult(result);
                this.item.text = `${icon} inplace-lsp: ${text}`;
                this.item.tooltip = `Inplace LSP: ${result?.message ?? text}`;
            }
        };
    }

    dispose(): void {
        this.item.dispose();
    }
}
