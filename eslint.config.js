// Lint for mistakes that compile: floating promises lose errors and, on the webhook path, events.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', '.data/']),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // What the service process loads. An ES module import of node:http, direct or through Stripe's ES
  // module build, also loads Node's undici and http2: src/stripe/sdk.ts says why and how.
  {
    files: ['src/**/*.ts', 'tasks/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'stripe', allowTypeImports: true, message: "Import { Stripe } from src/stripe/sdk.ts, which loads the SDK's CommonJS build." },
            ...['node:http', 'http'].map((name) => ({
              name,
              allowTypeImports: true,
              message: "Use process.getBuiltinModule('node:http') (see src/stripe/sdk.ts).",
            })),
          ],
        },
      ],
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
  // The dashboard's browser modules: their types are checked by tsconfig.dashboard.json.
  {
    files: ['src/http/dashboard/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'module',
      globals: { document: 'readonly', location: 'readonly', fetch: 'readonly', setInterval: 'readonly', console: 'readonly' },
    },
  },
);
