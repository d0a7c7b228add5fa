// Flat config: eslint's and typescript-eslint's recommended rules, type-aware.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['dist/', 'out/', 'node_modules/', '*.mjs'] },
    eslint.configs.recommended,
    ...tseslint.configs.recommendedTypeChecked,
    {
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        rules: {
            '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
            '@typescript-eslint/no-floating-promises': [
                'error',
                {
                    // node:test's describe/it return promises the runner itself awaits.
                    allowForKnownSafeCalls: [{ from: 'package', name: ['describe', 'it'], package: 'node:test' }],
                },
            ],
            eqeqeq: 'error',
        },
    },
);
