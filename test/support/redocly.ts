/** `redocly lint` (recommended rules, the repository's redocly.yaml) of a served OpenAPI document: what both deployables' document tests require to be empty. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

export async function redoclyLint(document: unknown): Promise<{ totals: { errors: number; warnings: number; ignored: number }; problems: string[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-openapi-'));
  try {
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    // redocly exits 1 when it finds an error: its report is on stdout all the same.
    const { stdout } = await promisify(execFile)(path.join(ROOT, 'node_modules/.bin/redocly'), ['lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', file], {
      cwd: ROOT,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((failed: Error & { stdout?: string }) => {
      if (!failed.stdout) throw failed;
      return { stdout: failed.stdout };
    });
    const { totals, problems } = JSON.parse(stdout) as { totals: { errors: number; warnings: number; ignored: number }; problems: Array<{ ruleId: string; message: string }> };
    return { totals, problems: problems.map((p) => `${p.ruleId}: ${p.message}`) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
