// duckdb_query.mjs: DuckDB beside `siglake search` in the search benchmark.
//
//   node duckdb_query.mjs DUCKDB_PACKAGE_DIR SQL
//
// Runs SQL once in a fresh in-memory DuckDB with its external file cache off (so a run never
// reads from an earlier run's memory) and prints {"seconds", "rows", "read_bytes", "read_calls"}.
// read_bytes and read_calls are this process's rchar and syscr (/proc/self/io) across the query:
// every byte DuckDB read from the files, through the page cache or not. DuckDB's own profiling
// counter (total_bytes_read) does not count Parquet scans in this version, so it is not used.
// DUCKDB_PACKAGE_DIR is a directory whose node_modules holds @duckdb/node-api (scripts/duckdb).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [, , pkgDir, sql] = process.argv;
const require = createRequire(join(resolve(pkgDir), 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

function io() {
  const s = readFileSync('/proc/self/io', 'utf8');
  return { rchar: Number(/rchar: (\d+)/.exec(s)[1]), syscr: Number(/syscr: (\d+)/.exec(s)[1]) };
}

const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
await conn.run('SET enable_external_file_cache = false');
const before = io();
const t0 = performance.now();
const reader = await conn.runAndReadAll(sql);
const seconds = (performance.now() - t0) / 1000;
const after = io();
console.log(JSON.stringify({ seconds, rows: reader.getRows().length, read_bytes: after.rchar - before.rchar, read_calls: after.syscr - before.syscr }));
