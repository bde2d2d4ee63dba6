package work

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The property test drives a book with seeded random sequences of offers, takes, renewals,
// completions and expiries from several workers, with clock jumps past lease deadlines, beside
// a model that applies the rules independently; after every step the book must agree with the
// model and keep its invariants:
//   - no file is in two live leases, and InFlight is exactly the leased files;
//   - a Take never leases more than the ask's slots, and leases exactly the bins the placement
//     rules pick (fitting ones in their pass's order; the owner's worker only after its wait);
//   - only the holder of a live lease renews or completes it, and completes it once;
//   - every bin ever offered is exactly one of offered, leased or ended.

const (
	propTables   = 2
	propFiles    = 12 // per table
	propWorkers  = 4  // w0 is the owner's own
	propDuration = time.Minute
	propWait     = 10 * time.Second
)

type modelLease struct {
	id, table, key, worker string
	deadline               time.Time
	files                  []string
	ended, completed       bool
}

type modelOffer struct {
	job     Job
	offered time.Time
	rank    int // its place in the last pass that offered it
}

type model struct {
	offers     [propTables]map[string]modelOffer // by bin key
	leases     map[string]*modelLease
	ids        []string // every lease id issued, for renewals and completions of ended leases
	firstOffer time.Time
	lastRemote time.Time
	// offeringSince: when the model last went from no offers to some; zero while none. unasked:
	// how long offers were out before it since the last remote ask.
	offeringSince time.Time
	unasked       time.Duration
	seen          [propTables]map[string]bool // every bin key ever offered
	counts        map[string]int              // what happened, so the test knows it tried each rule
}

func tableName(i int) string { return fmt.Sprintf("t%d", i) }

// propBin is a bin of the given files of table ti; file f's size is (f+1) x 10 bytes.
func propBin(files []int) Job {
	j := Job{Kind: "l1", Partition: "2026-12-04", Dir: "d", TargetFileBytes: 1}
	for _, f := range files {
		g := f % 4
		j.Inputs = append(j.Inputs, Input{Path: fmt.Sprintf("d/f%02d", f), Size: int64(f+1) * 10, Rows: 1, Generation: g})
		j.Generation = max(j.Generation, g+1)
	}
	return j
}

func TestBookProperties(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 40
	}
	counts := map[string]int{}
	for seed := range seeds {
		runProperty(t, uint64(seed), counts)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("over %d seeds: %v", seeds, counts)
	for _, event := range []string{"leased", "local leased", "local waited", "renewed", "completed", "expired",
		"refused leased", "refused twice", "kept offer time", "not live", "not holder", "slots bound", "wait from offering"} {
		if counts[event] < seeds/4 {
			t.Errorf("%q happened %d times in %d runs: the sequences do not exercise it", event, counts[event], seeds)
		}
	}
}

func runProperty(t *testing.T, seed uint64, counts map[string]int) {
	r := rand.New(rand.NewPCG(seed, 99))
	b := NewBook(Config{MinDuration: propDuration, OwnerWait: propWait}, rand.NewPCG(seed, 1))
	m := &model{leases: map[string]*modelLease{}, counts: counts}
	for i := range propTables {
		m.offers[i], m.seen[i] = map[string]modelOffer{}, map[string]bool{}
	}
	now := t0
	for step := range 300 {
		switch r.IntN(20) {
		case 0, 1, 2:
			m.offer(t, b, r, r.IntN(propTables), now)
		case 3, 4, 5, 6:
			m.take(t, b, r, now)
		case 7, 8, 9:
			m.renew(t, b, r, now)
		case 10, 11, 12:
			m.complete(t, b, r, now)
		case 13:
			m.expire(t, b, now)
		case 14:
			now = now.Add(time.Duration(30+r.IntN(150)) * time.Second) // a jump past deadlines
		default:
			now = now.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
		}
		m.check(t, b)
		if t.Failed() {
			t.Logf("seed %d step %d", seed, step)
			return
		}
	}
}

// liveFiles are the files of the model's leases not ended (lapsed ones included: they are in
// flight until Expire).
func (m *model) leasedFiles(table string) map[string]string {
	out := map[string]string{}
	for _, l := range m.leases {
		if !l.ended && l.table == table {
			for _, f := range l.files {
				out[f] = l.id
			}
		}
	}
	return out
}

func (m *model) offer(t *testing.T, b *Book, r *rand.Rand, ti int, now time.Time) {
	table := tableName(ti)
	var jobs []Job
	for range r.IntN(5) {
		if len(m.offers[ti]) > 0 && r.IntN(3) == 0 { // the last pass's bin again, its files reordered
			keys := slices.Sorted(maps.Keys(m.offers[ti]))
			j := m.offers[ti][keys[r.IntN(len(keys))]].job
			j.Inputs = slices.Clone(j.Inputs)
			slices.Reverse(j.Inputs)
			jobs = append(jobs, j)
			continue
		}
		jobs = append(jobs, propBin(r.Perm(propFiles)[:1+r.IntN(3)]))
	}
	if m.firstOffer.IsZero() {
		m.firstOffer = now
	}
	leased, pass := m.leasedFiles(table), map[string]bool{}
	next := map[string]modelOffer{}
	var wantRefused []string
	for _, j := range jobs {
		clash := false
		for _, in := range j.Inputs {
			clash = clash || leased[in.Path] != "" || pass[in.Path]
		}
		if clash {
			wantRefused = append(wantRefused, binKey(j))
			continue
		}
		if old, ok := m.offers[ti][binKey(j)]; ok && old.offered.Before(now) {
			m.counts["kept offer time"]++
		}
		for _, in := range j.Inputs {
			pass[in.Path] = true
		}
		o := modelOffer{job: j, offered: now, rank: len(next)}
		if old, ok := m.offers[ti][binKey(j)]; ok {
			o.offered = old.offered
		}
		next[binKey(j)] = o
		m.seen[ti][binKey(j)] = true
	}
	m.offers[ti] = next
	m.noteOffering(now)
	var refused []string
	for _, rf := range b.Offer(table, jobs, now) {
		switch {
		case errors.Is(rf.Err, ErrLeased):
			m.counts["refused leased"]++
		case errors.Is(rf.Err, ErrTwice):
			m.counts["refused twice"]++
		default:
			t.Errorf("offer refused a bin for %v", rf.Err)
		}
		refused = append(refused, binKey(rf.Job))
	}
	if fmt.Sprint(refused) != fmt.Sprint(wantRefused) {
		t.Errorf("offer of %d bins refused %q, want %q", len(jobs), refused, wantRefused)
	}
}

type candidate struct {
	ti  int
	key string
	o   modelOffer
}

func (m *model) take(t *testing.T, b *Book, r *rand.Rand, now time.Time) {
	w := r.IntN(propWorkers)
	worker, local := fmt.Sprint("w", w), w == 0
	want := Want{FreeBytes: int64(r.IntN(4)) * 100, MergeBytes: 100}
	if r.IntN(2) == 0 {
		want.MaxBinBytes = int64(10 + r.IntN(300))
	}
	if r.IntN(3) == 0 {
		want.MaxBins = 1 + r.IntN(2) // the owner's share
	}
	if !local {
		m.lastRemote, m.unasked = now, 0
	}
	anyAge := local && now.Sub(m.firstOffer) >= propWait
	if !m.lastRemote.IsZero() {
		anyAge = local && m.unasked+m.offeredSinceAsked(now) >= propWait
		if local && m.offeringSince.After(m.lastRemote) {
			m.counts["wait from offering"]++
		}
	}
	var cands []candidate
	for ti := range propTables {
		for key, o := range m.offers[ti] {
			fits := want.MaxBinBytes == 0 || o.job.Bytes() <= want.MaxBinBytes
			switch {
			case fits && (!local || anyAge || now.Sub(o.offered) >= propWait):
				cands = append(cands, candidate{ti, key, o})
			case fits:
				m.counts["local waited"]++
			}
		}
	}
	slices.SortFunc(cands, func(x, y candidate) int {
		return cmp.Or(cmp.Compare(x.o.rank, y.o.rank), x.o.offered.Compare(y.o.offered), cmp.Compare(x.ti, y.ti), cmp.Compare(x.key, y.key))
	})
	if len(cands) > want.Slots() {
		m.counts["slots bound"]++
	}
	cands = cands[:min(len(cands), want.Slots())]

	ls, err := b.Take(worker, want, local, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) > want.Slots() {
		t.Errorf("%s asked for %d slots and got %d leases", worker, want.Slots(), len(ls))
	}
	if len(ls) != len(cands) {
		t.Errorf("%s (local %v) %+v at %v took %d bins, the model %d", worker, local, want, now.Sub(t0), len(ls), len(cands))
		return
	}
	for i, l := range ls {
		c := cands[i]
		if l.Table != tableName(c.ti) || binKey(l.Job) != c.key || l.Worker != worker || l.Local != local ||
			!l.Deadline.Equal(now.Add(propDuration)) {
			t.Errorf("lease %d: %s %q for %s until %v; the model: %s %q until %v", i, l.Table, binKey(l.Job), l.Worker, l.Deadline.Sub(t0),
				tableName(c.ti), c.key, now.Add(propDuration).Sub(t0))
			return
		}
		if _, dup := m.leases[l.ID]; dup {
			t.Errorf("lease id %s issued twice", l.ID)
		}
		ml := &modelLease{id: l.ID, table: l.Table, key: c.key, worker: worker, deadline: l.Deadline}
		for _, in := range l.Job.Inputs {
			ml.files = append(ml.files, in.Path)
		}
		m.leases[l.ID] = ml
		m.counts["leased"]++
		if local {
			m.counts["local leased"]++
		}
		m.ids = append(m.ids, l.ID)
		delete(m.offers[c.ti], c.key)
	}
	m.noteOffering(now)
}

// offeredSinceAsked: how long offers have been out without a break, from the last remote ask at
// the earliest.
func (m *model) offeredSinceAsked(now time.Time) time.Duration {
	if m.offeringSince.IsZero() {
		return 0
	}
	return now.Sub(maxTime(m.offeringSince, m.lastRemote))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// noteOffering keeps offeringSince and unasked as the book does.
func (m *model) noteOffering(now time.Time) {
	n := 0
	for _, o := range m.offers {
		n += len(o)
	}
	switch {
	case n == 0:
		m.unasked += m.offeredSinceAsked(now)
		m.offeringSince = time.Time{}
	case m.offeringSince.IsZero():
		m.offeringSince = now
	}
}

// pick returns a lease id (issued or not) and a worker, mostly the holder.
func (m *model) pick(r *rand.Rand) (string, string, *modelLease) {
	if len(m.ids) == 0 || r.IntN(10) == 0 {
		return testLeaseID(r.IntN(1000)), "w1", nil
	}
	l := m.leases[m.ids[r.IntN(len(m.ids))]]
	worker := l.worker
	if r.IntN(4) == 0 {
		worker = fmt.Sprint("w", r.IntN(propWorkers))
	}
	return l.id, worker, l
}

// expect is the error the model predicts for a renewal or completion of l by worker at now.
func expect(l *modelLease, worker string, now time.Time) error {
	switch {
	case l == nil || l.ended || !now.Before(l.deadline):
		return ErrNotLive
	case l.worker != worker:
		return ErrNotHolder
	}
	return nil
}

func (m *model) countErr(err error, ok string) {
	switch {
	case err == nil:
		m.counts[ok]++
	case errors.Is(err, ErrNotLive):
		m.counts["not live"]++
	case errors.Is(err, ErrNotHolder):
		m.counts["not holder"]++
	}
}

func sameErr(got, want error) bool {
	if want == nil {
		return got == nil
	}
	return errors.Is(got, want)
}

func (m *model) renew(t *testing.T, b *Book, r *rand.Rand, now time.Time) {
	id, worker, l := m.pick(r)
	want := expect(l, worker, now)
	got, err := b.Renew(id, worker, now)
	if !sameErr(err, want) {
		t.Errorf("renew %s by %s: %v, the model %v", id, worker, err, want)
		return
	}
	m.countErr(err, "renewed")
	if err == nil {
		l.deadline = now.Add(propDuration)
		if !got.Deadline.Equal(l.deadline) {
			t.Errorf("renewed to %v, want %v", got.Deadline.Sub(t0), l.deadline.Sub(t0))
		}
	}
}

func (m *model) complete(t *testing.T, b *Book, r *rand.Rand, now time.Time) {
	id, worker, l := m.pick(r)
	want := expect(l, worker, now)
	got, err := b.Complete(id, worker, now)
	if !sameErr(err, want) {
		t.Errorf("complete %s by %s: %v, the model %v", id, worker, err, want)
		return
	}
	m.countErr(err, "completed")
	if err == nil {
		if l.completed || got.Worker != l.worker || binKey(got.Job) != l.key {
			t.Errorf("completed %s (%q by %s), completed before: %v", id, binKey(got.Job), got.Worker, l.completed)
		}
		l.ended, l.completed = true, true
		b.Settle(got) // the model's owner commits at once (TestCompletedLeaseInFlightUntilSettled: meanwhile)
	}
}

func (m *model) expire(t *testing.T, b *Book, now time.Time) {
	var want []string
	for _, l := range m.leases {
		if !l.ended && !now.Before(l.deadline) {
			want = append(want, l.id)
			l.ended = true
			m.counts["expired"]++
		}
	}
	var got []string
	for _, l := range b.Expire(now) {
		got = append(got, l.ID)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("expired %v, the model %v", got, want)
	}
}

// check holds the book to the invariants and to the model's states.
func (m *model) check(t *testing.T, b *Book) {
	for ti := range propTables {
		table := tableName(ti)
		leases, offers := b.Leases(table), b.Offers(table)
		holder := map[string]string{}
		state := map[string]string{}
		for _, l := range leases {
			for _, in := range l.Job.Inputs {
				if other, ok := holder[in.Path]; ok {
					t.Errorf("file %s in leases %s and %s", in.Path, other, l.ID)
				}
				holder[in.Path] = l.ID
			}
			state[binKey(l.Job)] += "leased "
		}
		if fl := b.InFlight(table); len(fl) != len(holder) {
			t.Errorf("%s: %d files in flight, %d in leases", table, len(fl), len(holder))
		}
		for _, o := range offers {
			for _, in := range o.Job.Inputs {
				if id, ok := holder[in.Path]; ok {
					t.Errorf("offered file %s is in lease %s", in.Path, id)
				}
				holder[in.Path] = "an offer"
			}
			state[binKey(o.Job)] += "offered "
		}
		if got := b.Outstanding(table); got.OfferedBins != len(offers) || got.LeasedBins != len(leases) {
			t.Errorf("%s: outstanding %+v, %d offers and %d leases", table, got, len(offers), len(leases))
		}
		m.checkStates(t, ti, state)
	}
}

// checkStates: every bin ever offered is in exactly the state the model says: offered, leased
// (by a lease not ended) or ended (neither).
func (m *model) checkStates(t *testing.T, ti int, state map[string]string) {
	table := tableName(ti)
	leased := map[string]bool{}
	for _, l := range m.leases {
		if !l.ended && l.table == table {
			leased[l.key] = true
		}
	}
	for key := range m.seen[ti] {
		want := "" // ended
		if _, ok := m.offers[ti][key]; ok {
			want += "offered "
		}
		if leased[key] {
			want = "leased " + want
		}
		if state[key] != want || len(want) > len("offered ") {
			t.Errorf("%s bin %q: the book has it %q, the model %q (exactly one of offered, leased, ended)", table, key, state[key], want)
		}
	}
	for key := range state {
		if !m.seen[ti][key] {
			t.Errorf("%s bin %q in the book was never offered", table, key)
		}
	}
}
