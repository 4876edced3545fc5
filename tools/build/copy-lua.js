// Part of `pnpm build`: the Lua scripts ship inside @feed/storage's compiled output, so a
// deployed folder (`pnpm deploy`) runs them without the repository's `lua/` folder.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');
// With lua/includes/, which the loader pulls into the scripts that name them.
fs.cpSync(path.join(root, 'lua'), path.join(root, 'packages/storage/dist/lua'), { recursive: true, filter: (from) => !path.extname(from) || from.endsWith('.lua') });
