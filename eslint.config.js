// ESLint over every TypeScript directory that tsconfig.json compiles, with
// typescript-eslint's type-aware recommended rules. A rule switched off or
// changed here says why on its line; docs/decisions/linting.md has the rest.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      'dist/',
      'node_modules/',
      // Written by json-schema-to-typescript (npm run schemas:generate) and drift-checked in npm test; not our code to restyle.
      'src/generated/',
    ],
  },
  {
    files: ['{src,client,consumers,scripts,test,bench}/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        // Types come from the nearest tsconfig.json: the program `npm run typecheck` builds.
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Ports return promises; an async body that happens not to await still turns a throw into a rejection, which callers rely on.
      '@typescript-eslint/require-await': 'off',
      // `const { id: _omitted, ...rest } = x` is how a field is left out, as tsc's noUnusedLocals also accepts.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // AbortSignal.reason is typed any; an aborted wait rejects with it, as Node's own abortable APIs do.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true }],
    },
  },
);
