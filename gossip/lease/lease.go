// Package lease is the table-lease election: which member owns a table, given
// the members that compete for it.
//
// It is rendezvous (highest-random-weight) hashing: every member scores every
// table, and the member with the highest score owns it. Every process that
// sees the same member set picks the same owner without talking to anyone,
// and a join or leave moves only the tables the joiner wins or the leaver
// held; no table moves between two members that stay.
//
// The package is pure: no clock, no I/O, no package state. Which members
// compete (alive, maintenance role, same catalog) and when an owner may act
// (settle periods) are the gossip package's view.
package lease

// Owner returns the member of members that owns table, or "" when members is
// empty. The result does not depend on the order of members; duplicates are
// harmless. Ties in score (astronomically rare) go to the smaller name so
// every process still agrees.
func Owner(table string, members []string) string {
	cands := make([]Candidate, len(members))
	for i, m := range members {
		cands[i] = NewCandidate(m)
	}
	return Pick(table, cands)
}

// Candidate is a member with its name hash computed once, so recomputing
// the owners of many tables costs one mix per (table, member) pair.
// Candidates compare equal when their names do.
type Candidate struct {
	Name string
	hash uint64
}

// NewCandidate is the candidate of the member named name.
func NewCandidate(name string) Candidate {
	return Candidate{Name: name, hash: memberHash(name)}
}

// Pick is Owner over precomputed candidates.
func Pick(table string, cands []Candidate) string {
	th := hashString(table)
	best := -1
	var bestW uint64
	for i, c := range cands {
		w := weight(th, c.hash)
		if best < 0 || w > bestW || (w == bestW && c.Name < cands[best].Name) {
			best, bestW = i, w
		}
	}
	if best < 0 {
		return ""
	}
	return cands[best].Name
}

// weight is the score of a member for a table. The member hash is mixed
// before the xor so that similar names ("pod-1", "pod-2") do not produce
// correlated scores, and the result is mixed again so every output bit
// depends on every input bit.
func weight(tableHash, memberHash uint64) uint64 {
	return mix64(tableHash ^ memberHash)
}

func memberHash(name string) uint64 {
	return mix64(hashString(name) + 0x9e3779b97f4a7c15)
}

// hashString is 64-bit FNV-1a: stable across processes, versions and
// platforms, which the lease math needs (Go's maphash is seeded per process).
func hashString(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// mix64 is the splitmix64 finalizer, a bijection with full avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
