// Package pqdecode is the k-way merge on parquet-go's values (issue 36): each input decoded row
// group by row group and column by column with github.com/parquet-go/parquet-go into batches laid
// out by field (input.Columns), the batches merged by kmerge.Order, each run of rows copied field
// by field into writer.ValueChunks, which the sink's parquet-go encoder writes without Arrow in
// between. It runs where the inputs have the output's Parquet schema
// (no conform) and no row filter or fold needs Arrow rows; merge.Rewrite decides.
package pqdecode
