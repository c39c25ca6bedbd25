import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // .tmp: what the scripts write (docs:reference's scratch copy, packed tarballs), not sources
  { ignores: ['**/dist/**', '**/node_modules/**', '.tmp/**', 'packages/*/src/migrate/generated-migrations.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use `as const` arrays, not enum.' },
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' },
        {
          selector: "CallExpression[callee.object.name=/^(it|test|describe)$/][callee.property.name=/^(only|skip)$/]",
          message: 'No focused or skipped tests.',
        },
      ],
    },
  },
  {
    files: ['eslint.config.js', 'vitest.config.ts', 'tsup.config.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
