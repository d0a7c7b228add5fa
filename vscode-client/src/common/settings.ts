/**
 * Settings: the `inplaceLsp` section typed as ISettings, `${...}` variables substituted, the
 * part the language server reads (everything but `interpreter`), and which changes restart
 * it. Pure functions over a configuration-like object so they test without VS Code.
 */

export const SECTION = 'inplaceLsp';

export type RunMode = 'onType' | 'onSave';
/** Which inplace-lsp runs: the one this extension bundles, or the interpreter's own. */
export type ImportStrategy = 'useBundled' | 'fromEnvironment';
export type Device = 'auto' | 'cuda' | 'cpu';
export type VerifyCwd = 'temporary' | 'project';

export interface IVerifySettings {
    device: Device;
    timeoutS: number;
    python: string | null;
    launcher: string[];
    cwd: VerifyCwd;
}

export interface ISettings {
    /** Runs the server: `<interpreter...> -m inplace_lsp serve`; empty means "find one". */
    interpreter: string[];
    importStrategy: ImportStrategy;
    select: string[];
    ignore: string[];
    severity: Record<string, string>;
    strict: boolean;
    showHints: boolean;
    run: RunMode;
    debounceMs: number;
    maxFileBytes: number;
    functionTimeLimitS: number;
    verify: IVerifySettings;
}

/** What the server receives (initialization options and workspace/configuration): not how
 *  it was started. */
export type IServerSettings = Omit<ISettings, 'interpreter' | 'importStrategy'>;

export const DEFAULTS: ISettings = {
    interpreter: [],
    importStrategy: 'useBundled',
    select: ['IPL'],
    ignore: [],
    severity: {},
    strict: false,
    showHints: false,
    run: 'onType',
    debounceMs: 0,
    maxFileBytes: 2_000_000,
    functionTimeLimitS: 1.5,
    verify: { device: 'auto', timeoutS: 120, python: null, launcher: [], cwd: 'temporary' },
};

/** The slice of vscode.WorkspaceConfiguration these functions use. */
export interface ConfigurationLike {
    get<T>(section: string): T | undefined;
}

/** Where `${...}` variables point. */
export interface VariableContext {
    workspaceFolder?: string;
    userHome?: string;
    env?: Record<string, string | undefined>;
}

/** Substitutes `${workspaceFolder}`, `${userHome}` and `${env:NAME}`; leaves unknown ones. */
export function substituteVariables(value: string, context: VariableContext): string {
    return value.replace(/\$\{([^}]+)\}/g, (whole: string, name: string) => {
        if (name === 'workspaceFolder' && context.workspaceFolder !== undefined) {
            return context.workspaceFolder;
        }
        if (name === 'userHome' && context.userHome !== undefined) {
            return context.userHome;
        }
        if (name.startsWith('env:')) {
            return context.env?.[name.slice(4)] ?? '';
        }
        return whole;
    });
}

function stringArray(value: unknown, fallback: string[]): string[] {
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? [...value] : [...fallback];
}

function oneOf<T extends string>(value: unknown, choices: readonly T[], fallback: T): T {
    return typeof value === 'string' && (choices as readonly string[]).includes(value) ? (value as T) : fallback;
}

function finiteNumber(value: unknown, fallback: number): number {
    return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** The typed settings for one workspace folder, variables substituted in the paths. */
export function resolveSettings(config: ConfigurationLike, context: VariableContext): ISettings {
    const sub = (s: string): string => substituteVariables(s, context);
    const severity = config.get<unknown>('severity');
    const python = config.get<unknown>('verify.python');
    const launcher = config.get<unknown>('verify.launcher');
    return {
        interpreter: stringArray(config.get('interpreter'), DEFAULTS.interpreter).map(sub),
        importStrategy: oneOf(
            config.get('importStrategy'),
            ['useBundled', 'fromEnvironment'] as const,
            DEFAULTS.importStrategy,
        ),
        select: stringArray(config.get('select'), DEFAULTS.select),
        ignore: stringArray(config.get('ignore'), DEFAULTS.ignore),
        severity:
            severity !== null && typeof severity === 'object' && !Array.isArray(severity)
                ? { ...(severity as Record<string, string>) }
                : {},
        strict: config.get<unknown>('strict') === true,
        showHints: config.get<unknown>('showHints') === true,
        run: oneOf(config.get('run'), ['onType', 'onSave'] as const, DEFAULTS.run),
        debounceMs: finiteNumber(config.get('debounceMs'), DEFAULTS.debounceMs),
        maxFileBytes: finiteNumber(config.get('maxFileBytes'), DEFAULTS.maxFileBytes),
        functionTimeLimitS: finiteNumber(config.get('functionTimeLimitS'), DEFAULTS.functionTimeLimitS),
        verify: {
            device: oneOf(config.get('verify.device'), ['auto', 'cuda', 'cpu'] as const, DEFAULTS.verify.device),
            timeoutS: finiteNumber(config.get('verify.timeoutS'), DEFAULTS.verify.timeoutS),
            python: typeof python === 'string' && python.trim() !== '' ? sub(python) : null,
            launcher: stringArray(launcher, DEFAULTS.verify.launcher).map(sub),
            cwd: oneOf(config.get('verify.cwd'), ['temporary', 'project'] as const, DEFAULTS.verify.cwd),
        },
    };
}

/** The settings the server reads: it reports unknown keys, so `interpreter` and
 *  `importStrategy` stay here. */
export function serverSettings(settings: ISettings): IServerSettings {
    const { interpreter: _interpreter, importStrategy: _strategy, ...rest } = settings;
    return rest;
}

/** The slice of vscode.ConfigurationChangeEvent needed to decide on a restart. */
export interface ChangeLike {
    affectsConfiguration(section: string): boolean;
}

/**
 * A change to any of our settings restarts the server: `interpreter` is read only when it
 * starts, and a fresh server keeps nothing (analyses, verify results, warm workers) from the
 * old settings.
 */
export function needsRestart(event: ChangeLike): boolean {
    return event.affectsConfiguration(SECTION);
}

