// `node tools/bench/profile-parts.cjs <file.cpuprofile> <requests> [seconds]`: the API process's
// --cpu-prof (BENCH_CPU_PROF, see docs/benchmarks.md), its last `seconds` (default 9.5: the measured
// run) attributed to the part of the chain of each busy sample's innermost known frame; prints
// the table rows of docs/benchmarks.md (share of busy CPU, microseconds per request).
const fs = require('fs');
const p = JSON.parse(fs.readFileSync(process.argv[2]));
const requests = Number(process.argv[3]);
const tail = Number(process.argv[4] || 9.5) * 1e6;
const byId = new Map(p.nodes.map(n => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children || []) parent.set(c, n.id);
let t = p.startTime; const times = [];
for (const d of p.timeDeltas) { t += d; times.push(t); }
const end = p.endTime, start = end - tail;
const parts = [
  [/\(garbage collector\)/, 'garbage collection'],
  [/video-catalog|lru-cache|video-document/, 'video catalogue'],
  [/identity\.ts|jsonwebtoken|jws|jwa|node:internal\/crypto\/hash.*Hmac/, 'identity (JWT, token cache)'],
  [/ring-claims|storage\/src\/ring\.ts|version-store/, 'ring claim (offset slot SHA-1, Lua call)'],
  [/@redis\/client|@redis\+client|cluster-key-slot/, 'Redis client (node-redis)'],
  [/feed-service|feed-read-state/, 'feed service (strategy chain, read state)'],
  [/request-budget|deadline\.ts/, 'request budget (deadline timers)'],
  [/validate\.ts|joi/, 'query validation'],
  [/ring-scan|candidate-verdict|queue-copies/, 'scan, verdicts, queue copy'],
  [/user-history|fingerprint/, 'user filter'],
  [/variant-readout/, 'variant readout'],
  [/metrics\.ts|prom-client/, 'metrics labels, latency histogram'],
  [/telemetry|opentelemetry/, 'tracing without an exporter'],
  [/cors/, 'CORS'],
  [/request-id/, 'request id'],
  [/http-semantics/, 'HTTP semantics'],
  [/apps\/api\/src\/app\.ts|new-device-limit/, 'app middleware'],
  [/feed-routes|res\.send|express\/lib\/response|_http_outgoing|writev|stream_base_commons|node:net|streams\/writable/, 'route handler, res.send, socket write'],
  [/api-server\.ts/, 'route handler, res.send, socket write'],
  [/router|express|parseurl|path-to-regexp|_http_server|_http_incoming|_http_common|content-type|mime|finalhandler|on-finished|type-is/, 'Express routing, HTTP parsing'],
];
const sums = new Map(); let total = 0;
const frameKey = (cf) => `${cf.url} ${cf.functionName}`;
for (let i = 0; i < p.samples.length; i++) {
  if (times[i] < start) continue;
  const dt = (i + 1 < times.length ? times[i + 1] : end) - times[i];
  let n = byId.get(p.samples[i]);
  if (n.callFrame.functionName === '(idle)') continue;
  total += dt;
  let part = 'event loop, microtasks, Node internals';
  for (let id = n.id; id !== undefined; id = parent.get(id)) {
    const k = frameKey(byId.get(id).callFrame);
    const hit = parts.find(([re]) => re.test(k));
    if (hit) { part = hit[1]; break; }
  }
  sums.set(part, (sums.get(part) || 0) + dt);
}
for (const [k, v] of [...sums].sort((a, b) => b[1] - a[1])) console.log(`| ${k} | ${(100 * v / total).toFixed(1)} % (${(v / requests).toFixed(0)} us) |`);
console.log(`| all (busy CPU per request) | ${(total / requests).toFixed(0)} us |`);
