// Records, in dist/source.json, the checkout this extension is packaged from, so that its
// "Install inplace-lsp into it" button can pip-install that checkout while it is still on the
// machine (src/common/preflight.ts checks it is one before using it). Run by vscode:prepublish.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const client = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const checkout = path.dirname(client);
fs.mkdirSync(path.join(client, 'dist'), { recursive: true });
fs.writeFileSync(path.join(client, 'dist', 'source.json'), `${JSON.stringify({ checkout }, null, 2)}\n`);
console.log(`dist/source.json: checkout ${checkout}`);
