package lake

import "sync"

// tableLocks serialises the commits of each table within one Lake.
type tableLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// lockTable holds table name's lock until unlock. Every attempt that loads, stages and commits a
// table takes it (CommitGroup, so CommitAppend; CommitReplace; ExpireSnapshots; the property
// updates; Locked's callers), so one process's appends, replaces, expiry and property edits of a table queue here
// instead of conflicting through the catalog, where a loser pays a reload and a retry. Processes
// still race each other; the catalog's pins decide those.
//
// A plain mutex, not re-entrant: nothing run under it (the stage, Props and Fence callbacks, the
// property edits) calls back into the Lake's committing methods. It is held for one attempt only,
// never across the waits between attempts, and each commit is abandoned at the commit deadline,
// so a waiter waits at most about one attempt per holder ahead of it.
func (l *Lake) lockTable(name string) (unlock func()) {
	l.locks.mu.Lock()
	if l.locks.m == nil {
		l.locks.m = map[string]*sync.Mutex{}
	}
	mu := l.locks.m[name]
	if mu == nil {
		mu = &sync.Mutex{}
		l.locks.m[name] = mu
	}
	l.locks.mu.Unlock()
	mu.Lock()
	return mu.Unlock
}

// Locked runs f holding table name's lock, for a caller whose commit must be staged on the
// metadata it checked first (the delete sweep's done marks: a check of the newest metadata, then
// a commit pinned to it): the process's own appends and replaces wait instead of moving the
// table between the check and the commit. f must not commit through the Lake's own methods
// (the lock is not re-entrant); it loads and commits the table itself.
func (l *Lake) Locked(name string, f func() error) error {
	defer l.lockTable(name)()
	return f()
}
