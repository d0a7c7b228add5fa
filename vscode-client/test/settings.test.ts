/** Settings resolution without VS Code: defaults, invalid values, variables, restart triggers. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
    DEFAULTS,
    needsRestart,
    resolveSettings,
    serverSettings,
    substituteVariables,
    type ConfigurationLike,
} from '../src/common/settings';

function config(values: Record<string, unknown>): ConfigurationLike {
    return { get: <T>(key: string) => values[key] as T | undefined };
}

const context = { workspaceFolder: '/ws', userHome: '/home/me', env: { VENV: '/venvs/torch' } };

describe('substituteVariables', () => {
    it('replaces workspaceFolder, userHome and env variables', () => {
        assert.equal(substituteVariables('${workspaceFolder}/.venv/bin/python', context), '/ws/.venv/bin/python');
        assert.equal(substituteVariables('${userHome}/py', context), '/home/me/py');
        assert.equal(substituteVariables('${env:VENV}/bin/python', context), '/venvs/torch/bin/python');
    });

    it('empties unset env variables and keeps unknown variables', () => {
        assert.equal(substituteVariables('${env:NOPE}x', context), 'x');
        assert.equal(substituteVariables('${config:foo}', context), '${config:foo}');
        assert.equal(substituteVariables('${workspaceFolder}', {}), '${workspaceFolder}');
    });
});

describe('resolveSettings', () => {
    it('gives the defaults for an empty configuration', () => {
        assert.deepEqual(resolveSettings(config({}), context), DEFAULTS);
    });

    it('reads every key and substitutes variables in paths only', () => {
        const settings = resolveSettings(
            config({
                interpreter: ['${workspaceFolder}/.venv/bin/python', '-X', 'utf8'],
                importStrategy: 'fromEnvironment',
                select: ['IPL00'],
                ignore: ['IPL003'],
                severity: { IPL001: 'error' },
                strict: true,
                showHints: true,
                run: 'onSave',
                debounceMs: 250,
                maxFileBytes: 5000000,
                functionTimeLimitS: 2.5,
                'verify.device': 'cpu',
                'verify.timeoutS': 30,
                'verify.python': '${env:VENV}/bin/python',
                'verify.launcher': ['srun', '--chdir=${workspaceFolder}'],
                'verify.cwd': 'project',
            }),
            context,
        );
        assert.deepEqual(settings, {
            interpreter: ['/ws/.venv/bin/python', '-X', 'utf8'],
            importStrategy: 'fromEnvironment',
            select: ['IPL00'],
            ignore: ['IPL003'],
            severity: { IPL001: 'error' },
            strict: true,
            showHints: true,
            run: 'onSave',
            debounceMs: 250,
            maxFileBytes: 5000000,
            functionTimeLimitS: 2.5,
            verify: {
                device: 'cpu',
                timeoutS: 30,
                python: '/venvs/torch/bin/python',
                launcher: ['srun', '--chdir=/ws'],
                cwd: 'project',
            },
        });
    });

    it('replaces invalid values by the defaults', () => {
        const settings = resolveSettings(
            config({
                interpreter: 'python3',
                importStrategy: 'bundled',
                select: [1, 2],
                severity: ['error'],
                strict: 'yes',
                showHints: 1,
                run: 'always',
                debounceMs: Number.NaN,
                maxFileBytes: 'big',
                functionTimeLimitS: null,
                'verify.device': 'tpu',
                'verify.timeoutS': '10',
                'verify.python': '   ',
                'verify.launcher': 'srun',
                'verify.cwd': 'home',
            }),
            context,
        );
        assert.deepEqual(settings, DEFAULTS);
    });

    it('keeps verify.python null (the server then picks the workspace venv)', () => {
        assert.equal(resolveSettings(config({ 'verify.python': null }), context).verify.python, null);
    });
});

describe('serverSettings', () => {
    it('leaves out interpreter and importStrategy, which the server would report as unknown', () => {
        const sent = serverSettings({ ...DEFAULTS, interpreter: ['/usr/bin/python3'], importStrategy: 'fromEnvironment' });
        assert.equal('interpreter' in sent, false);
        assert.equal('importStrategy' in sent, false);
        assert.deepEqual(Object.keys(sent).sort(), ['debounceMs', 'functionTimeLimitS', 'ignore', 'maxFileBytes', 'run', 'select', 'severity', 'showHints', 'strict', 'verify']);
    });
});

describe('needsRestart', () => {
    const changed = (...sections: string[]) => ({
        affectsConfiguration: (section: string) =>
            sections.some((s) => s === section || s.startsWith(`${section}.`)),
    });

    it('restarts for the interpreter and every server setting, not for others', () => {
        assert.equal(needsRestart(changed('inplaceLsp.interpreter')), true);
        assert.equal(needsRestart(changed('inplaceLsp.select')), true);
        assert.equal(needsRestart(changed('inplaceLsp.verify.python')), true);
        assert.equal(needsRestart(changed('editor.fontSize')), false);
        assert.equal(needsRestart(changed('python.defaultInterpreterPath')), false);
    });
});
