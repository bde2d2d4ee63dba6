// Package kmerge is the k-way merge every merge path runs: cursors over the
// inputs' sources, the merge order (timestamp, then input, then row), handed
// out as runs to a RunSink, and the Assembler that turns runs into records
// of the output's schema a chunk at a time.
package kmerge
