// duckdb_copy.mjs: the DuckDB contender of the merge benchmark.
//
//   node duckdb_copy.mjs DUCKDB_PACKAGE_DIR OUT.parquet THREADS FILE...
//
// Runs COPY (SELECT * FROM read_parquet([FILE...]) ORDER BY timestamp) TO OUT
// (FORMAT parquet, COMPRESSION zstd) in an in-memory DuckDB and prints
// {"seconds": ..., "cpu": ..., "rows": ...} (cpu: the process's CPU seconds
// over the COPY). DUCKDB_PACKAGE_DIR is a directory whose
// node_modules holds @duckdb/node-api (scripts/duckdb).
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [, , pkgDir, out, threads, ...files] = process.argv;
const require = createRequire(join(pkgDir, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const q = (s) => `'${String(s).replaceAll("'", "''")}'`;
const inst = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const conn = await inst.connect();
const t0 = performance.now();
const cpu0 = process.cpuUsage();
await conn.run(`COPY (SELECT * FROM read_parquet([${files.map(q).join(',')}]) ORDER BY timestamp) TO ${q(out)} (FORMAT parquet, COMPRESSION zstd)`);
const seconds = (performance.now() - t0) / 1000;
const used = process.cpuUsage(cpu0);
const cpu = (used.user + used.system) / 1e6; // the COPY alone: node and DuckDB start-up excluded
const reader = await conn.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM read_parquet(${q(out)})`);
const rows = Number(reader.getRowObjects()[0].n);
console.log(JSON.stringify({ seconds, cpu, rows }));
