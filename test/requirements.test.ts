/**
 * Every requirement number the product's source and docs cite (`SPEC R17`, `(R11)`, `D7`, `C3`,
 * `V2`, ...) is defined in docs/requirements.md, so a reader resolves it from the repository.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const SCANNED = ['apps', 'packages', 'lua', 'tools', 'infra', 'docs', 'README.md'];
const TEXT = /\.(ts|mts|cjs|js|lua|md|ya?ml|html|json)$|Dockerfile/;
const CITED = /\b(?:R\d{1,2}a?|[VCD]\d{1,2})\b/g;
/** Tokens of that shape that are no requirement. */
const NOT_REQUIREMENTS = new Set(['V8' /* the JavaScript engine */]);

/** The product's files under `entry`: tests, build outputs and dependencies left out. */
function productFiles(entry: string): string[] {
  if (!statSync(path.join(ROOT, entry)).isDirectory()) return [entry];
  return readdirSync(path.join(ROOT, entry), { withFileTypes: true })
    .filter((d) => !['node_modules', 'dist', 'test', 'coverage'].includes(d.name) && !d.name.startsWith('.') && !d.name.includes('.test.'))
    .flatMap((d) => (d.isDirectory() ? productFiles(path.join(entry, d.name)) : TEXT.test(d.name) ? [path.join(entry, d.name)] : []));
}

/** The numbers docs/requirements.md defines: the first cell of its table rows. */
export function definedRequirements(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^\| ([RVCD]\d{1,2}a?) \|/gm)].map((m) => m[1]!));
}

/** Each cited number that `defined` lacks, with the files citing it. */
export function undefinedCitations(files: Array<[string, string]>, defined: Set<string>): Map<string, string[]> {
  const missing = new Map<string, string[]>();
  for (const [file, text] of files) {
    for (const [token] of text.matchAll(CITED)) {
      if (defined.has(token) || NOT_REQUIREMENTS.has(token)) continue;
      missing.set(token, [...new Set([...(missing.get(token) ?? []), file])]);
    }
  }
  return missing;
}

describe('requirement numbers', () => {
  const defined = definedRequirements(readFileSync(path.join(ROOT, 'docs/requirements.md'), 'utf8'));
  const files = SCANNED.flatMap(productFiles).map((file): [string, string] => [file, readFileSync(path.join(ROOT, file), 'utf8')]);

  it('when the product cites a requirement number, then docs/requirements.md defines it', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(defined.size).toBeGreaterThan(40);
    expect(Object.fromEntries(undefinedCitations(files, defined))).toEqual({});
  });

  it('when a file cites a number no line defines, then it is reported with the file', () => {
    const cited: Array<[string, string]> = [['a.ts', '// SPEC R17 and (R99), see D7 and C12; V8 is the engine']];
    expect(Object.fromEntries(undefinedCitations(cited, new Set(['R17', 'D7'])))).toEqual({ R99: ['a.ts'], C12: ['a.ts'] });
  });
});
