/** Interpreter selection without VS Code: the setting, then the Python extension, then python3. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
    findInterpreter,
    pickInterpreter,
    PYTHON_EXTENSION_ID,
    serverCommand,
    type ExtensionsLike,
    type PythonExtensionApi,
} from '../src/common/python';

function extensions(api: PythonExtensionApi | undefined, options: { throws?: boolean } = {}) {
    const calls = { activate: 0, lookups: [] as string[] };
    const registry: ExtensionsLike = {
        getExtension(id: string) {
            calls.lookups.push(id);
            if (api === undefined) {
                return undefined;
            }
            return {
                isActive: false,
                exports: api,
                activate: () => {
                    calls.activate += 1;
                    return options.throws ? Promise.reject(new Error('broken')) : Promise.resolve(api);
                },
            };
        },
    };
    return { registry, calls };
}

function pythonApi(executable: string | undefined): PythonExtensionApi {
    return {
        environments: {
            getActiveEnvironmentPath: () => ({ id: 'env', path: executable ?? '' }),
            resolveEnvironment: () =>
                Promise.resolve(executable === undefined ? undefined : { executable: { uri: { fsPath: executable } } }),
        },
    };
}

describe('pickInterpreter', () => {
    it("prefers the setting, with its arguments, over the Python extension's environment", () => {
        assert.deepEqual(pickInterpreter(['/opt/py/bin/python', '-X', 'utf8'], '/venv/bin/python'), {
            command: ['/opt/py/bin/python', '-X', 'utf8'],
            source: 'setting',
        });
        assert.deepEqual(pickInterpreter([], '/venv/bin/python'), { command: ['/venv/bin/python'], source: 'python extension' });
        assert.deepEqual(pickInterpreter(['', ' '], '/venv/bin/python'), { command: ['/venv/bin/python'], source: 'python extension' });
    });

    it('without the Python extension: the setting, then python3', () => {
        assert.deepEqual(pickInterpreter(['/opt/py/bin/python', '-X', 'utf8'], undefined), {
            command: ['/opt/py/bin/python', '-X', 'utf8'],
            source: 'setting',
        });
        assert.deepEqual(pickInterpreter(['/opt/py/bin/python', ''], ''), { command: ['/opt/py/bin/python'], source: 'setting' });
        assert.deepEqual(pickInterpreter([''], undefined), { command: ['python3'], source: 'default' });
        assert.deepEqual(pickInterpreter([], undefined), { command: ['python3'], source: 'default' });
    });
});

describe('findInterpreter', () => {
    it('takes the setting over the Python extension, without activating it', async () => {
        const { registry, calls } = extensions(pythonApi('/venv/bin/python'));
        const found = await findInterpreter(['/usr/bin/python3.12'], registry);
        assert.deepEqual(found, { command: ['/usr/bin/python3.12'], source: 'setting' });
        assert.deepEqual(calls.lookups, []);
        assert.equal(calls.activate, 0);
    });

    it("asks the Python extension for its active environment when the setting is empty", async () => {
        const { registry, calls } = extensions(pythonApi('/venv/bin/python'));
        const found = await findInterpreter([], registry);
        assert.deepEqual(found, { command: ['/venv/bin/python'], source: 'python extension' });
        assert.deepEqual(calls.lookups, [PYTHON_EXTENSION_ID]);
        assert.equal(calls.activate, 1);
    });

    it('takes the setting without the Python extension, or when it fails or has no environment', async () => {
        const setting = ['/usr/bin/python3.12'];
        const expected = { command: setting, source: 'setting' };
        assert.deepEqual(await findInterpreter(setting, extensions(undefined).registry), expected);
        assert.deepEqual(await findInterpreter(setting, extensions(pythonApi('/x'), { throws: true }).registry), expected);
        assert.deepEqual(await findInterpreter(setting, extensions(pythonApi(undefined)).registry), expected);
        assert.deepEqual(await findInterpreter(setting, extensions({}).registry), expected);
    });

    it('falls back to python3 without either', async () => {
        assert.equal((await findInterpreter([], extensions(undefined).registry)).source, 'default');
        assert.equal((await findInterpreter([], extensions(pythonApi('/x'), { throws: true }).registry)).source, 'default');
        assert.equal((await findInterpreter([], extensions(pythonApi(undefined)).registry)).source, 'default');
        assert.equal((await findInterpreter([], extensions({}).registry)).source, 'default');
    });
});

describe('serverCommand', () => {
    it('runs the module with the interpreter and its arguments', () => {
        assert.deepEqual(serverCommand({ command: ['/venv/bin/python', '-X', 'utf8'], source: 'setting' }), {
            command: '/venv/bin/python',
            args: ['-X', 'utf8', '-m', 'inplace_lsp', 'serve'],
        });
    });
});
