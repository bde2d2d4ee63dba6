// arrow-stream.mjs: Arrow JS (apache-arrow) as an independent reader of the WAL buffer's
// answers (docs/wal-buffer.md), beside DuckDB for the Parquet files.
//
//   node arrow-stream.mjs URL [COLS]
//       GETs URL, reads the body as an Arrow IPC stream and prints one JSON object: the HTTP
//       status, the rows, the column names, the schema metadata, and the row checksum of COLS
//       (comma separated, default every column) as a decimal string. The checksum is the one of
//       docs/testing.md (sidecar/rowsum in Go), over the types the built-in events table has:
//       booleans, integers, strings, timestamps and maps of them.
import { createHash } from 'node:crypto';
import { RecordBatchReader, Type, TimeUnit } from 'apache-arrow';

const MASK = (1n << 64n) - 1n;
const [url, colsArg] = process.argv.slice(2);
if (!url) {
  console.error('usage: node arrow-stream.mjs URL [COLS]');
  process.exit(2);
}

const res = await fetch(url);
if (res.status !== 200) {
  console.log(JSON.stringify({ status: res.status, error: await res.text() }));
  process.exit(0);
}
// The whole body: fetch rejects when the connection is cut before the last chunk.
const body = new Uint8Array(await res.arrayBuffer());
const reader = RecordBatchReader.from(body);
reader.open();
const schema = reader.schema;
const names = colsArg ? colsArg.split(',') : schema.fields.map((f) => f.name);
const metadata = Object.fromEntries(schema.metadata);

function micros(v, unit) {
  const b = BigInt(v);
  switch (unit) {
    case TimeUnit.SECOND: return b * 1000000n;
    case TimeUnit.MILLISECOND: return b * 1000n;
    case TimeUnit.MICROSECOND: return b;
    default: return b / 1000n; // nanoseconds, truncated toward zero
  }
}

// text is the canonical text of value v of Arrow type t (docs/testing.md).
function text(v, t) {
  switch (t.typeId) {
    case Type.Bool: return v ? 'true' : 'false';
    case Type.Int: return BigInt(v).toString();
    case Type.Utf8: case Type.LargeUtf8: return v;
    case Type.Map: {
      const [kt, vt] = t.children[0].type.children.map((c) => c.type);
      let s = '{';
      for (const [k, x] of v) s += enc(k, kt) + enc(x, vt);
      return s + '}';
    }
    default: throw new Error(`type ${t} is not supported by this checker`);
  }
}

function enc(v, t) {
  if (v === null || v === undefined) return '-';
  const s = text(v, t);
  return `${Buffer.byteLength(s, 'utf8')}:${s}`;
}

let rows = 0;
let sum = 0n;
for (const batch of reader) {
  const cols = names.map((n) => {
    const i = batch.schema.fields.findIndex((f) => f.name === n);
    if (i < 0) throw new Error(`no column ${n}`);
    return { vec: batch.getChildAt(i), type: batch.schema.fields[i].type };
  });
  for (let r = 0; r < batch.numRows; r++) {
    let row = '';
    for (const { vec, type } of cols) {
      if (!vec.isValid(r)) {
        row += '-';
      } else if (type.typeId === Type.Timestamp) {
        // The raw value: get() converts to float milliseconds and loses microseconds.
        const d = vec.data[0];
        const s = micros(d.values[d.offset + r], type.unit).toString();
        row += `${s.length}:${s}`;
      } else {
        row += enc(vec.get(r), type);
      }
    }
    const h = createHash('md5').update(row, 'utf8').digest();
    sum = (sum + h.readBigUInt64LE(0)) & MASK;
    rows++;
  }
}
console.log(JSON.stringify({ status: 200, rows, columns: schema.fields.map((f) => f.name), metadata, checksum: sum.toString() }));
