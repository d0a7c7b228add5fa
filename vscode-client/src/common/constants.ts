/** Names shared by the modules: command ids (ours and the server's) and the output channel. */

export const EXTENSION_NAME = 'Inplace LSP';

/** Commands this extension contributes (package.json `contributes.commands`). */
export const Commands = {
    verifyAtCursor: 'inplaceLsp.verifyAtCursor',
    fixAll: 'inplaceLsp.fixAll',
    showDebugInfo: 'inplaceLsp.showDebugInfo',
    restart: 'inplaceLsp.restart',
    showLogs: 'inplaceLsp.showLogs',
    /** The status item's command while the interpreter has no server (not in the palette). */
    showProblem: 'inplaceLsp.showServerProblem',
} as const;

/** Commands the server provides (workspace/executeCommand); vscode-languageclient registers them. */
export const ServerCommands = {
    verify: 'inplace-lsp.verify',
    showDebugInfo: 'inplace-lsp.showDebugInfo',
} as const;

/** The server's fix-all code action kind. */
export const FIX_ALL_KIND = 'source.fixAll.inplace-lsp';
