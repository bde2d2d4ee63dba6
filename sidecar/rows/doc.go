// Package rows is the one language of rows that deletion requests, retention rules, folding's
// key check, `siglake search` and the WAL buffer share: COLUMN IN (VALUES) conditions and their
// --where/--in grammar, the time syntax of --from/--to, a Filter (conditions and a time range)
// checked against a table schema and turned into an Iceberg row filter (scan planning) or a
// rowfilter.Filter (row evaluation), and the table schema a WAL segment asks for.
// It is pure: no I/O, no clock, no metrics. Grammar and semantics: docs/deletes.md.
package rows
