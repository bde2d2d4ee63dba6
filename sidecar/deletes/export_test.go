package deletes

// RewriteFile exposes the sweeper's one-file rewrite to the external tests.
var RewriteFile = (*Sweeper).rewrite

// PartitionOf exposes the partition a data file path names.
var PartitionOf = partitionOf
