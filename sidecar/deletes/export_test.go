package deletes

// RewriteFile exposes the sweeper's one-file rewrite to the external tests.
var RewriteFile = (*Sweeper).rewrite

// PartitionOf exposes the partition a data file path names.
var PartitionOf = partitionOf

// SetStaged sets the hook a delete-task rewrite's commit step runs after staging.
func SetStaged(s *Sweeper, f func()) { s.staged = f }

// SetCancelStaged sets the hook Cancel runs between its read and its commit; nil removes it.
func SetCancelStaged(f func()) { cancelStaged = f }
