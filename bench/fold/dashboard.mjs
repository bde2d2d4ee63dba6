// dashboard.mjs: the dashboard query of the fold benchmark, timed inside DuckDB.
//
//   node dashboard.mjs DUCKDB_PACKAGE_DIR RUNS NAME=LIST...
//
// Each LIST is a file with one Parquet path a line. Runs the query RUNS times over each list,
// round robin, in one in-memory DuckDB with one thread, and prints {"NAME": {"ms": [...],
// "groups": n}, ..., "same": bool}: every list must give the same answer.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';

const [, , pkgDir, runs, ...named] = process.argv;
const require = createRequire(join(pkgDir, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const q = (s) => `'${String(s).replaceAll("'", "''")}'`;
const list = (f) => readFileSync(f, 'utf8').split('\n').filter((l) => l !== '').map(q).join(',');
const sql = (files) => `SELECT time_bucket(INTERVAL 5 MINUTE, "timestamp") AS t, service,
  sum(events)::BIGINT AS requests, sum(CASE WHEN severity IN ('error', 'fatal') THEN events END)::BIGINT AS errors,
  sum(bytes)::BIGINT AS bytes, max(max_bytes) AS longest
  FROM read_parquet([${files}]) GROUP BY ALL ORDER BY ALL`;
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const conn = await inst.connect();
const sets = named.map((a) => { const [name, f] = a.split('='); return { name, files: list(f), ms: [], answer: '' }; });
for (let i = 0; i < Number(runs); i++) {
  for (const s of sets) {
    const t0 = performance.now();
    const r = await conn.runAndReadAll(sql(s.files));
    s.ms.push(performance.now() - t0);
    s.answer = JSON.stringify(r.getRowObjectsJson());
  }
}
const out = { same: sets.every((s) => s.answer === sets[0].answer) };
for (const s of sets) out[s.name] = { ms: s.ms, groups: JSON.parse(s.answer).length };
console.log(JSON.stringify(out));
