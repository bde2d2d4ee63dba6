// Package pqdecode is the k-way merge on parquet-go's values (issue 36): each input decoded row
// group by row group with github.com/parquet-go/parquet-go, the rows merged by kmerge.Order as
// parquet-go rows, and handed to the sink as writer.ValueChunks, which its parquet-go encoder
// writes without Arrow in between. It runs where the inputs have the output's Parquet schema
// (no conform) and no row filter or fold needs Arrow rows; merge.Rewrite decides.
package pqdecode
