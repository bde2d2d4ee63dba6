package lake

// For the external tests (package lake_test), which use catalogtest: it imports lake.
var (
	WriteBatch = batch
	QuickRetry = quickRetry
)
