// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'packages/*/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    // Suites take describe/it/hooks from requirements.js, so that tests needing
    // something missing (PostgreSQL, Redis...) are reported as skipped, not lost.
    files: ['test/**/*.ts'],
    ignores: ['test/helpers/requirements.ts', 'test/internals/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:test',
              importNames: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
              message:
                'Take describe/it/hooks from test/helpers/requirements.js: it reports tests that cannot run as skipped.',
            },
          ],
        },
      ],
    },
  },
  {
    // A bare `LIMIT ?` makes SQLite prepare the statement again on every run (src/store/sqlite/bound-limit.ts).
    files: ['src/store/sqlite/*.ts', 'src/backup/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['Literal[value', 'TemplateElement[value.raw'].map((node) => ({
          selector: `${node}=/\\bLIMIT\\s+[?@:$]/]`,
          message:
            "Write a bound LIMIT as boundLimit('?'): SQLite prepares a statement with a bare `LIMIT ?` again on every run.",
        })),
      ],
    },
  },
);
