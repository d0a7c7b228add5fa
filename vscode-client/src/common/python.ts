/**
 * Which interpreter runs the server: the `inplaceLsp.interpreter` setting, else the Python
 * extension's active environment, else `python3`. The Python extension is reached through the
 * `extensions` object passed in, so this module runs (and tests) without VS Code.
 */

export const PYTHON_EXTENSION_ID = 'ms-python.python';
export const FALLBACK_INTERPRETER = ['python3'];

/** The parts of the Python extension's API (`environments`) used here. */
export interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: unknown): { id: string; path: string };
    resolveEnvironment(
        environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: { fsPath: string } } } | undefined>;
    onDidChangeActiveEnvironmentPath?: (listener: () => unknown) => { dispose(): unknown };
}

export interface PythonExtensionApi {
    environments?: PythonEnvironmentsApi;
}

/** The slice of `vscode.extensions` used here. */
export interface ExtensionsLike {
    getExtension(id: string):
        | { isActive: boolean; exports: unknown; activate(): Thenable<unknown> }
        | undefined;
}

export type InterpreterSource = 'setting' | 'python extension' | 'default' | 'path';

/** Where the bundled server looks when the chosen interpreter cannot run it (too old, gone):
 *  the newest Python on the PATH first. */
export const PATH_CANDIDATES = ['python3.14', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3', 'python', 'py'];

export interface Interpreter {
    command: string[];
    source: InterpreterSource;
}

/** The setting's interpreter and arguments, blanks dropped; empty when it names none. */
function configured(setting: readonly string[]): string[] {
    return setting.filter((part) => part.trim() !== '');
}

/**
 * The choice itself: an explicit setting (the user named this interpreter for this server),
 * then the Python extension's environment, then python3.
 */
export function pickInterpreter(setting: readonly string[], fromPythonExtension: string | undefined): Interpreter {
    const named = configured(setting);
    if (named.length > 0) {
        return { command: named, source: 'setting' };
    }
    if (fromPythonExtension) {
        return { command: [fromPythonExtension], source: 'python extension' };
    }
    return { command: [...FALLBACK_INTERPRETER], source: 'default' };
}

/** The Python extension's API, activating it first; undefined when it is not installed. */
export async function pythonExtensionApi(extensions: ExtensionsLike): Promise<PythonExtensionApi | undefined> {
    const extension = extensions.getExtension(PYTHON_EXTENSION_ID);
    if (!extension) {
        return undefined;
    }
    try {
        if (!extension.isActive) {
            await extension.activate();
        }
        return extension.exports as PythonExtensionApi;
    } catch {
        return undefined; // a broken Python extension must not keep our server from starting
    }
}

/** The executable of the Python extension's active environment for `resource`, if any. */
export async function pythonExtensionInterpreter(
    api: PythonExtensionApi | undefined,
    resource?: unknown,
): Promise<string | undefined> {
    const environments = api?.environments;
    if (!environments) {
        return undefined;
    }
    try {
        const environment = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(resource));
        return environment?.executable.uri?.fsPath;
    } catch {
        return undefined;
    }
}

/** The interpreter for the server, and where it came from (shown in the logs). The Python
 *  extension is not asked (nor activated) when the setting names one. */
export async function findInterpreter(
    setting: readonly string[],
    extensions: ExtensionsLike,
    resource?: unknown,
): Promise<Interpreter> {
    if (configured(setting).length > 0) {
        return pickInterpreter(setting, undefined);
    }
    const api = await pythonExtensionApi(extensions);
    return pickInterpreter(setting, await pythonExtensionInterpreter(api, resource));
}

/** Where the interpreter came from, in words (for messages). */
export function describeSource(source: InterpreterSource): string {
    switch (source) {
        case 'setting':
            return 'the inplaceLsp.interpreter setting';
        case 'python extension':
            return "the Python extension's selected interpreter";
        case 'path':
            return 'found on the PATH';
        default:
            return 'the default, python3 on the PATH';
    }
}

/** The interpreter's executable (its arguments left out). */
export function interpreterPath(interpreter: Interpreter): string {
    return interpreter.command[0] ?? FALLBACK_INTERPRETER[0] ?? 'python3';
}

/** The server's command line for an interpreter. */
export function serverCommand(interpreter: Interpreter): { command: string; args: string[] } {
    const [command, ...prefix] = interpreter.command;
    return { command: command ?? FALLBACK_INTERPRETER[0] ?? 'python3', args: [...prefix, '-m', 'inplace_lsp', 'serve'] };
}
