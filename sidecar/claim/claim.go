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
	StreamKeyPrefix  = tableprops.ClaimPrefix   // + stream: a Claim
	ClaimerKeyPrefix = tableprops.ClaimerPrefix // + holder: a Heartbeat
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
)

// Claim is one stream's claim record.
type Claim struct {
	Holder string `json:"holder"`
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

// Parse reads the claim records out of table properties. A record that does not parse is an
// error naming its key: it was not written by siglake, and guessing could hand one stream to two
// processes.
func Parse(props map[string]string) (State, error) {
	st := State{Claims: map[string]Claim{}, Claimers: map[string]Heartbeat{}}
	claims, errs := claimProperty.List(props)
	for _, e := range claims {
		st.Claims[e.Name] = e.Value
	}
	beats, beatErrs := heartbeatProperty.List(props)
	for _, e := range beats {
		st.Claimers[e.Name] = e.Value
	}
	if errs = append(errs, beatErrs...); len(errs) > 0 {
		return st, fmt.Errorf(`claims %w (want {"holder":...,"epoch":...,"expires":RFC 3339} under %s<stream>, {"expires":RFC 3339} under %s<holder>)`,
			errs[0], StreamKeyPrefix, ClaimerKeyPrefix)
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
	p.write(st, me, present, now, ttl)
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
func (p *Plan) write(st State, me string, present map[string]bool, now time.Time, ttl time.Duration) {
	expires := now.Add(ttl)
	p.Set[ClaimerKeyPrefix+me] = encode(heartbeatProperty, Heartbeat{Expires: expires})
	for _, s := range p.Hold {
		c := st.Claims[s]
		epoch := c.Epoch
		if c.Holder != me {
			epoch++
		}
		p.Set[StreamKeyPrefix+s] = encode(claimProperty, Claim{Holder: me, Epoch: epoch, Expires: expires})
	}
	for s, c := range st.Claims {
		if c.Holder == me && !present[s] {
			p.Release = append(p.Release, s) // its directory is gone
		}
	}
	sort.Strings(p.Release)
	for _, s := range p.Release {
		p.Remove = append(p.Remove, StreamKeyPrefix+s)
	}
	// Housekeeping: heartbeats dead for a whole TTL, and expired claims of streams that are gone.
	for h, hb := range st.Claimers {
		if h != me && now.Sub(hb.Expires) > ttl {
			p.Remove = append(p.Remove, ClaimerKeyPrefix+h)
		}
	}
	for s, c := range st.Claims {
		if c.Holder != me && !present[s] && !now.Before(c.Expires) {
			p.Remove = append(p.Remove, StreamKeyPrefix+s)
		}
	}
	sort.Strings(p.Remove)
}

// ReleaseAll is the commit of a claimer that stops: it removes its heartbeat and every claim it
// holds, so the others take its streams at once instead of after the TTL.
func ReleaseAll(st State, me string) (remove []string) {
	for s, c := range st.Claims {
		if c.Holder == me {
			remove = append(remove, StreamKeyPrefix+s)
		}
	}
	if _, ok := st.Claimers[me]; ok {
		remove = append(remove, ClaimerKeyPrefix+me)
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
