/**
 * Module headers say what and why in a paragraph (about 120 words, 150 at most); proofs and
 * history belong in docs/design.md. The header is a file's first comment; a Lua script's
 * KEYS/ARGV/Reply paragraphs are its interface, not counted.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const MAX_WORDS = 150;

function sourceFiles(entry: string): string[] {
  if (!statSync(path.join(ROOT, entry)).isDirectory()) return /\.(ts|mts|cjs|js|lua)$/.test(entry) ? [entry] : [];
  return readdirSync(path.join(ROOT, entry))
    .filter((name) => !['node_modules', 'dist', 'test', 'coverage'].includes(name) && !name.includes('.test.'))
    .flatMap((name) => sourceFiles(path.join(entry, name)));
}

/** The words of a source's first comment (0 when it opens with code). */
export function headerWords(source: string, lua: boolean): number {
  const header = /^\s*(?:#![^\n]*\n\s*)?(\/\*[\s\S]*?\*\/|(?:\/\/[^\n]*\n)+|--\[\[[\s\S]*?\]\])/.exec(source)?.[1] ?? '';
  const paragraphs = header.replace(/^[ \t*/-]+/gm, '').split(/\n\s*\n/);
  const prose = lua ? paragraphs.filter((p) => !/^\s*(KEYS|ARGV|Reply)/.test(p)) : paragraphs;
  return prose.join('\n').match(/[A-Za-z0-9]\S*/g)?.length ?? 0;
}

describe('module headers', () => {
  it(`when a product module opens with a header, then it is at most ${MAX_WORDS} words`, () => {
    const files = ['apps', 'packages', 'lua', 'tools'].flatMap(sourceFiles);
    const counted = files.map((file) => [file, headerWords(readFileSync(path.join(ROOT, file), 'utf8'), file.endsWith('.lua'))] as const);
    const longest = counted.reduce((a, b) => (b[1] > a[1] ? b : a));
    console.log(`longest module header: ${longest[1]} words (${longest[0]}) over ${files.length} files`);
    expect(counted.filter(([, words]) => words > MAX_WORDS)).toEqual([]);
  });

  it('when a header is counted, then code, a Lua interface and comment markers are not words', () => {
    expect(headerWords('/**\n * One two\n *\n * three.\n */\nconst four = 5;', false)).toBe(3);
    expect(headerWords('--[[\n  what: why\n\n  KEYS[1] a key\n  ARGV[1] an arg\n\n  Reply: 1\n]]\nreturn 1', true)).toBe(2);
    expect(headerWords('import x from "y";\n/** later */', false)).toBe(0);
  });
});
