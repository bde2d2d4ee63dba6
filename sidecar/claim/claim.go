// Package claim lets several drain processes share the streams of one WAL root: a process drains
// a stream only while it holds that stream's claim, a record in the catalog that names a holder
// and an expiry and changes only by compare-and-swap. docs/claims.md has the format and the
// safety argument.
//
// This file is the pure core: the record format and the decision of what to take, renew and
// release, as functions of the claims read, the streams present and the time.
package claim

import (
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// Property key prefixes of the claims table.
const (
	StreamKeyPrefix           = tableprops.ClaimPrefix      // + stream: a Claim
	ClaimerKeyPrefix          = tableprops.ClaimerPrefix    // + holder: a Heartbeat
	CommitterKeyPrefix        = tableprops.CommitterPrefix  // + table: a Claim with the holder's Addr
	CommitterClaimerKeyPrefix = tableprops.CommitterClaimer // + holder: a Heartbeat
)

// The records' codecs (docs/format/table-properties.md); neither carries a version.
var (
	claimProperty = tableprops.Codec[Claim]{Name: StreamKeyPrefix, What: "stream claim",
		Check: func(c Claim) error {
			if c.Holder == "" {
				return fmt.Errorf("a claim without a holder")
			}
			return nil
		}}
	heartbeatProperty = tableprops.Codec[Heartbeat]{Name: ClaimerKeyPrefix, What: "claimer heartbeat"}

	committerProperty = tableprops.Codec[Claim]{Name: CommitterKeyPrefix, What: "committer claim",
		Check: func(c Claim) error {
			if c.Holder == "" || c.Addr == "" {
				return fmt.Errorf("a committer claim without a holder or an address")
			}
			return nil
		}}
	committerHeartbeatProperty = tableprops.Codec[Heartbeat]{Name: CommitterClaimerKeyPrefix, What: "committer claimer heartbeat"}
)

// kind is one family of claims in the claims table: stream claims (the drain's) or committer
// claims (group commit's, one per table). Both share the decision; only keys and codecs differ.
type kind struct {
	claim    tableprops.Codec[Claim]
	beat     tableprops.Codec[Heartbeat]
	accepted string // the records accepted, for errors
}

var (
	streamKind = kind{claim: claimProperty, beat: heartbeatProperty,
		accepted: fmt.Sprintf(`{"holder":...,"epoch":...,"expires":RFC 3339} under %s<stream>, {"expires":RFC 3339} under %s<holder>`, StreamKeyPrefix, ClaimerKeyPrefix)}
	committerKind = kind{claim: committerProperty, beat: committerHeartbeatProperty,
		accepted: fmt.Sprintf(`{"holder":...,"addr":host:port,"epoch":...,"expires":RFC 3339} under %s<table>, {"expires":RFC 3339} under %s<holder>`, CommitterKeyPrefix, CommitterClaimerKeyPrefix)}
)

// Claim is one stream's claim record.
type Claim struct {
	Holder string `json:"holder"`
	// Addr is where the holder of a committer claim receives group commit requests (its
	// advertised peer address); empty in stream claims.
	Addr string `json:"addr,omitempty"`
	// Epoch grows by one every time the stream changes hands (never on renewal), so logs and
	// snapshot summaries tell the holders of one stream apart.
	Epoch   uint64    `json:"epoch"`
	Expires time.Time `json:"expires"`
}

// Heartbeat says a claimer is alive; the fair share divides the streams by the live claimers.
type Heartbeat struct {
	Expires time.Time `json:"expires"`
}

// State is the claims table as read: claims by stream, heartbeats by holder.
type State struct {
	Claims   map[string]Claim
	Claimers map[string]Heartbeat
}

// Parse reads the stream claim records out of table properties. A record that does not parse is
// an error naming its key: it was not written by siglake, and guessing could hand one stream to two
// processes.
func Parse(props map[string]string) (State, error) { return streamKind.parse(props) }

// ParseCommitters reads the committer claim records out of the claims table's properties, as
// Parse the stream claims.
func ParseCommitters(props map[string]string) (State, error) { return committerKind.parse(props) }

func (k kind) parse(props map[string]string) (State, error) {
	st := State{Claims: map[string]Claim{}, Claimers: map[string]Heartbeat{}}
	claims, errs := k.claim.List(props)
	for _, e := range claims {
		st.Claims[e.Name] = e.Value
	}
	beats, beatErrs := k.beat.List(props)
	for _, e := range beats {
		st.Claimers[e.Name] = e.Value
	}
	if errs = append(errs, beatErrs...); len(errs) > 0 {
		return st, fmt.Errorf(`claims %w (want %s)`, errs[0], k.accepted)
	}
	return st, nil
}

// encode is the stored form of a record: plain structs, which cannot fail to encode.
func encode[T any](c tableprops.Codec[T], v T) string {
	s, _ := c.Encode(v)
	return s
}

// Plan is what one claimer commits in one tick.
type Plan struct {
	Hold    []string          // streams held after the commit (kept and taken), sorted
	Taken   []string          // streams newly taken (free or expired), sorted
	Release []string          // streams given up (over the fair share, or gone from the WAL root)
	Others  map[string]string // stream -> live holder, for streams another process holds
	Set     map[string]string // properties to set
	Remove  []string          // properties to remove
	Share   int               // the fair share this plan aims at
	Live    int               // live claimers, this one included
}

// Decide plans one tick of claimer me at time now: renew the claims it keeps, take free or
// expired streams up to its fair share ceil(streams / live claimers), release those over it.
// A claim is free to take only after its expiry by the taker's clock; its holder stops
// committing a third of the TTL earlier by its own clock (see Fence), which is what bounds the
// tolerated clock skew. busy streams (a batch of theirs is in flight) are kept even over the
// share, so a stream is never released while this process may still commit it. Pure: the state,
// streams and time are arguments.
func Decide(st State, me string, streams []string, busy map[string]bool, now time.Time, ttl time.Duration) Plan {
	return decide(kindOf{streamKind, ""}, st, me, streams, busy, now, ttl)
}

// DecideCommitters plans one tick of committer claimer me, reachable at addr, over the tables
// present: the same rules as Decide (renew, take free or expired up to the fair share among the
// live committer claimers, release over it; rendezvous order), on the committer claims. No table
// is busy: a group commit in flight when its claim goes is arbitrated by the marks.
func DecideCommitters(st State, me, addr string, tables []string, now time.Time, ttl time.Duration) Plan {
	return decide(kindOf{committerKind, addr}, st, me, tables, nil, now, ttl)
}

// kindOf is the family of claims a plan writes, and the address its claims carry.
type kindOf struct {
	kind
	addr string
}

func decide(k kindOf, st State, me string, streams []string, busy map[string]bool, now time.Time, ttl time.Duration) Plan {
	p := Plan{Others: map[string]string{}, Set: map[string]string{}}
	live := map[string]bool{me: true}
	for h, hb := range st.Claimers {
		if now.Before(hb.Expires) {
			live[h] = true
		}
	}
	p.Live = len(live)
	p.Share = (len(streams) + p.Live - 1) / p.Live

	present := map[string]bool{}
	var mine, free []string
	for _, s := range streams {
		present[s] = true
		c, ok := st.Claims[s]
		switch {
		case ok && c.Holder == me:
			mine = append(mine, s)
		case ok && now.Before(c.Expires):
			p.Others[s] = c.Holder
		default:
			free = append(free, s)
		}
	}
	p.share(mine, free, me, busy)
	p.write(k, st, me, present, now, ttl)
	return p
}

// share picks the streams p holds, takes and releases: its own claims first (busy ones even
// over the share), then free streams up to the share.
func (p *Plan) share(mine, free []string, me string, busy map[string]bool) {
	// Keep the claims that cost the others least to leave alone: the ones this claimer would
	// prefer anyway (rendezvous order), so a rebalance moves few streams.
	byPreference(mine, me)
	byPreference(free, me)
	sort.SliceStable(mine, func(i, j int) bool { return busy[mine[i]] && !busy[mine[j]] })
	for i, s := range mine {
		if i < p.Share || busy[s] {
			p.Hold = append(p.Hold, s)
		} else {
			p.Release = append(p.Release, s)
		}
	}
	for _, s := range free {
		if len(p.Hold) >= p.Share {
			break
		}
		p.Hold = append(p.Hold, s)
		p.Taken = append(p.Taken, s)
	}
	sort.Strings(p.Hold)
	sort.Strings(p.Taken)
}

// write turns p's choice into the properties to set and remove: the heartbeat and the held
// claims (a new epoch where the holder changes), releases (streams whose directory is gone
// included), and the housekeeping of dead heartbeats and expired claims of gone streams.
func (p *Plan) write(k kindOf, st State, me string, present map[string]bool, now time.Time, ttl time.Duration) {
	expires := now.Add(ttl)
	p.Set[k.beat.Name+me] = encode(k.beat, Heartbeat{Expires: expires})
	for _, s := range p.Hold {
		c := st.Claims[s]
		epoch := c.Epoch
		if c.Holder != me {
			epoch++
		}
		p.Set[k.claim.Name+s] = encode(k.claim, Claim{Holder: me, Addr: k.addr, Epoch: epoch, Expires: expires})
	}
	for s, c := range st.Claims {
		if c.Holder == me && !present[s] {
			p.Release = append(p.Release, s) // its directory is gone
		}
	}
	sort.Strings(p.Release)
	for _, s := range p.Release {
		p.Remove = append(p.Remove, k.claim.Name+s)
	}
	// Housekeeping: heartbeats dead for a whole TTL, and expired claims of streams that are gone.
	for h, hb := range st.Claimers {
		if h != me && now.Sub(hb.Expires) > ttl {
			p.Remove = append(p.Remove, k.beat.Name+h)
		}
	}
	for s, c := range st.Claims {
		if c.Holder != me && !present[s] && !now.Before(c.Expires) {
			p.Remove = append(p.Remove, k.claim.Name+s)
		}
	}
	sort.Strings(p.Remove)
}

// ReleaseAll is the commit of a claimer that stops: it removes its heartbeat and every claim it
// holds, so the others take its streams at once instead of after the TTL.
func ReleaseAll(st State, me string) (remove []string) { return streamKind.releaseAll(st, me) }

// ReleaseAllCommitters is ReleaseAll of the committer claims: the tables' next committers are
// elected at the others' next tick instead of after the TTL.
func ReleaseAllCommitters(st State, me string) (remove []string) {
	return committerKind.releaseAll(st, me)
}

func (k kind) releaseAll(st State, me string) (remove []string) {
	for s, c := range st.Claims {
		if c.Holder == me {
			remove = append(remove, k.claim.Name+s)
		}
	}
	if _, ok := st.Claimers[me]; ok {
		remove = append(remove, k.beat.Name+me)
	}
	sort.Strings(remove)
	return remove
}

// Fence is how long after the start of a successful claim commit its holder may still start a
// drain commit: two thirds of the TTL. The last third is the margin that covers a commit in
// flight and the clock skew between holder and taker.
func Fence(ttl time.Duration) time.Duration { return ttl - ttl/3 }

// RenewEvery is the claim tick: a third of the TTL, so one failed renewal still leaves the
// claims valid and two in a row fence the holder before anybody may take over.
func RenewEvery(ttl time.Duration) time.Duration { return ttl / 3 }

// byPreference orders streams by rendezvous weight for claimer me, so different claimers reach
// for different free streams first and rarely collide on one CAS.
func byPreference(streams []string, me string) {
	w := func(s string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s))
		h.Write([]byte{0})
		h.Write([]byte(me))
		return h.Sum64()
	}
	sort.Slice(streams, func(i, j int) bool {
		wi, wj := w(streams[i]), w(streams[j])
		if wi != wj {
			return wi > wj
		}
		return streams[i] < streams[j]
	})
}
