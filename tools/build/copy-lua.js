// Part of `pnpm build`: the Lua scripts ship inside @feed/storage's compiled output, so a
// deployed folder (`pnpm deploy`) runs them without the repository's `lua/` folder.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');
const target = path.join(root, 'packages/storage/dist/lua');
fs.mkdirSync(target, { recursive: true });
for (const file of fs.readdirSync(path.join(root, 'lua')).filter((f) => f.endsWith('.lua'))) {
  fs.copyFileSync(path.join(root, 'lua', file), path.join(target, file));
}
