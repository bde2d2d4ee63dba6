package deletes

// SetCancelStaged sets the hook Cancel runs between its read and its commit; nil removes it.
func SetCancelStaged(f func()) { cancelStaged = f }
