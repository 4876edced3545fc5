/**
 * The start's warm-up (issue 49) with traces on (D5): its requests, client and server side, are
 * no traces (1,000 traces of about 7 spans each, every one with a 404 exception, per start before).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

it('when traces are on and the API warms up, then no span of its requests is exported', () => {
  const script = `
    const { inSpan, startTelemetry, stopTelemetry } = require('@feed/telemetry');
    startTelemetry('warm-up-probe');
    const { createServer } = require('node:http');
    const { warmUp } = require('./apps/api/src/warm-up');
    const server = createServer((req, res) => { req.resume(); res.writeHead(404).end('{}'); });
    warmUp(server, 10, 'warm-up-traces-secret-0123456789abcdef')
      .then((answers) => inSpan('after the warm-up', {}, async () => answers))
      .then((answers) => stopTelemetry().then(() => process.stderr.write('answers ' + JSON.stringify(Object.fromEntries(answers)) + '\\n')));
  `;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_')));
  // The console exporter writes each span, with its traceId, to stdout.
  const stdout = execFileSync(process.execPath, ['--conditions=@feed/source', '--import', 'tsx', '-e', script], { cwd: ROOT, env: { ...clean, OTEL_TRACES_EXPORTER: 'console' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  // One span, the one made after it: traces were on.
  expect(stdout.match(/traceId/g) ?? []).toHaveLength(1);
  expect(stdout).toContain("name: 'after the warm-up'");
}, 30_000);
