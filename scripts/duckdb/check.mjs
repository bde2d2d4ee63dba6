// check.mjs: DuckDB as an independent reader of the Parquet files siglake writes.
//
//   node check.mjs summarize [--column NAME] [--checksum COLS|--no-checksum] [FILE...]
//       Per file: row count and min/max of NAME (default "timestamp"; timestamps as
//       microseconds since the epoch). Over all files: total rows and the row checksum
//       of COLS (comma separated, default every column). Without FILE arguments a JSON
//       array of paths is read from stdin. Prints one JSON object.
//   node check.mjs query SQL
//       Runs SQL and prints its rows as a JSON array of objects (DuckDB's JSON value
//       conversion: BIGINT, HUGEINT and DECIMAL become strings, timestamps ISO text).
//
// The row checksum is defined in docs/testing.md; test/testenv computes the same value
// in Go over Arrow records. Keep the two in step: both are tested against each other.
import { DuckDBInstance, DuckDBTypeId } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';

const MASK64 = '18446744073709551615::UHUGEINT';
const MOD64 = '18446744073709551616::HUGEINT';

function sqlString(s) {
  return `'${String(s).replaceAll("'", "''")}'`;
}

function ident(s) {
  return `"${String(s).replaceAll('"', '""')}"`;
}

// enc returns a SQL expression for the canonical encoding of expr, whose DuckDB type is
// type: '-' for NULL, else '<byte length>:<text>'. depth names nested lambda variables.
function enc(expr, type, depth = 0) {
  const text = canonicalText(expr, type, depth);
  return `(CASE WHEN (${expr}) IS NULL THEN '-' ELSE strlen(${text})::VARCHAR || ':' || ${text} END)`;
}

function canonicalText(e, type, depth) {
  const v = `v${depth}`;
  switch (type.typeId) {
    case DuckDBTypeId.BOOLEAN:
    case DuckDBTypeId.TINYINT:
    case DuckDBTypeId.SMALLINT:
    case DuckDBTypeId.INTEGER:
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.UTINYINT:
    case DuckDBTypeId.USMALLINT:
    case DuckDBTypeId.UINTEGER:
    case DuckDBTypeId.UBIGINT:
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.UHUGEINT:
    case DuckDBTypeId.VARCHAR:
      return `(${e})::VARCHAR`;
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      return `printf('%.17g', (${e})::DOUBLE)`;
    case DuckDBTypeId.BLOB:
      return `hex(${e})`;
    case DuckDBTypeId.DATE:
      return `((${e}) - DATE '1970-01-01')::VARCHAR`;
    case DuckDBTypeId.TIMESTAMP:
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP_NS:
    case DuckDBTypeId.TIMESTAMP_TZ:
      return `epoch_us(${e})::VARCHAR`;
    case DuckDBTypeId.LIST:
      return `('[' || array_to_string(list_transform(${e}, lambda ${v}: ${enc(v, type.valueType, depth + 1)}), '') || ']')`;
    case DuckDBTypeId.MAP:
      return `('{' || array_to_string(list_transform(map_entries(${e}), lambda ${v}: ` +
        `${enc(`${v}['key']`, type.keyType, depth + 1)} || ${enc(`${v}['value']`, type.valueType, depth + 1)}), '') || '}')`;
    case DuckDBTypeId.STRUCT: {
      const parts = type.entryNames.map((n, i) => enc(`struct_extract(${e}, ${sqlString(n)})`, type.entryTypes[i], depth + 1));
      return `('(' || ${parts.length ? parts.join(' || ') : "''"} || ')')`;
    }
    default:
      throw new Error(`row checksum: unsupported column type ${type.toString()}`);
  }
}

// rowChecksumSQL: the sum over rows, mod 2^64, of the little-endian uint64 made of the
// first 8 bytes of MD5(concatenated canonical encodings of the columns).
function rowChecksumSQL(names, types) {
  const row = names.map((n, i) => enc(ident(n), types[i])).join(' || ');
  // sum() of UBIGINT is an exact HUGEINT (a sum of UHUGEINT would be a DOUBLE).
  return `coalesce(sum((md5_number(${row || "''"}) & ${MASK64})::UBIGINT) % ${MOD64}, 0)::VARCHAR`;
}

function extremeSQL(fn, col, type) {
  switch (type.typeId) {
    case DuckDBTypeId.TIMESTAMP:
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP_NS:
    case DuckDBTypeId.TIMESTAMP_TZ:
      return `epoch_us(${fn}(${ident(col)}))::VARCHAR`;
    default:
      return `${fn}(${ident(col)})::VARCHAR`;
  }
}

async function columns(conn, source) {
  const r = await conn.runAndReadAll(`SELECT * FROM ${source} LIMIT 0`);
  return { names: r.columnNames(), types: r.columnTypes() };
}

async function summarize(conn, args) {
  let column = 'timestamp';
  let checksum = '*';
  const files = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--column') column = args[++i];
    else if (a === '--checksum') checksum = args[++i];
    else if (a === '--no-checksum') checksum = '';
    else files.push(a);
  }
  if (files.length === 0) {
    const input = readFileSync(0, 'utf8').trim();
    if (input) files.push(...JSON.parse(input));
  }
  const out = { column, files: [], rows: 0, checksum: '0', checksumColumns: [] };
  for (const f of files) {
    const src = `read_parquet(${sqlString(f)})`;
    const { names, types } = await columns(conn, src);
    const idx = names.indexOf(column);
    let min = null;
    let max = null;
    let rows;
    if (idx >= 0) {
      const r = await conn.runAndReadAll(
        `SELECT count(*)::VARCHAR, ${extremeSQL('min', column, types[idx])}, ${extremeSQL('max', column, types[idx])} FROM ${src}`);
      [rows, min, max] = r.getRowsJson()[0];
    } else {
      rows = (await conn.runAndReadAll(`SELECT count(*)::VARCHAR FROM ${src}`)).getRowsJson()[0][0];
    }
    out.files.push({ path: f, rows: Number(rows), min, max, hasColumn: idx >= 0 });
    out.rows += Number(rows);
  }
  if (checksum && files.length > 0) {
    const src = `read_parquet([${files.map(sqlString).join(', ')}])`;
    const { names, types } = await columns(conn, src);
    const want = checksum === '*' ? names : checksum.split(',').map((s) => s.trim()).filter(Boolean);
    const wantTypes = want.map((n) => {
      const i = names.indexOf(n);
      if (i < 0) throw new Error(`checksum column ${n} not in files (have ${names.join(', ')})`);
      return types[i];
    });
    const r = await conn.runAndReadAll(`SELECT ${rowChecksumSQL(want, wantTypes)} FROM ${src}`);
    out.checksum = r.getRowsJson()[0][0];
    out.checksumColumns = want;
  }
  return out;
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const conn = await instance.connect();
  try {
    let out;
    if (mode === 'summarize') out = await summarize(conn, args);
    else if (mode === 'query' && args.length === 1) out = (await conn.runAndReadAll(args[0])).getRowObjectsJson();
    else throw new Error('usage: check.mjs summarize [--column NAME] [--checksum COLS|--no-checksum] [FILE...] | query SQL');
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

main().catch((err) => {
  process.stderr.write(`check.mjs: ${err.message}\n`);
  process.exit(1);
});
