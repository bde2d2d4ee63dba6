// Package mllog turns memberlist's log lines into zap entries and counts the
// packets and streams memberlist refused for another cluster label or a key
// this member lacks, which memberlist reports only in its log.
package mllog

import (
	"log"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// memberlist logs through a *log.Logger with lines like
// "[WARN] memberlist: Was able to connect to x over TCP but UDP probes
// failed". Writer turns each line into a zap entry at the matching level.
type Writer struct {
	log *zap.Logger
	// Closing demotes everything to debug once shutdown has begun:
	// memberlist's loops run on briefly after its sockets close and log
	// each failed send as an error.
	Closing atomic.Bool
	// RefusedLabel and RefusedKey count packets and streams memberlist
	// refused for another cluster label or a key it lacks: what an outsider
	// trying to join looks like (docs/gossip.md).
	RefusedLabel, RefusedKey atomic.Uint64
	// Each refusal is one line from memberlist, so a keyless sender flooding
	// UDP would turn every packet into an error line; refusals log at debug,
	// plus one warn summary per source and refusalSummaryEvery.
	mu      sync.Mutex
	sources map[string]*refusalSource
	now     func() time.Time
}

// refusalSummaryEvery is the least time between two refusal summaries for
// one source address.
const refusalSummaryEvery = time.Minute

// maxRefusalSources bounds the sources tracked (spoofed UDP sources are
// free); past it, refusals share one entry.
const maxRefusalSources = 256

type refusalSource struct {
	last       time.Time // of the last summary
	label, key uint64    // refusals since it
}

// New returns a *log.Logger for memberlist.Config.Logger that writes to l,
// and the Writer behind it.
func New(l *zap.Logger) (*log.Logger, *Writer) {
	w := &Writer{log: l.Named("memberlist"), sources: map[string]*refusalSource{}, now: time.Now}
	return log.New(w, "", 0), w
}

func (w *Writer) Write(p []byte) (int, error) {
	level, msg := parseMemberlistLine(string(p))
	reason := refusal(msg)
	switch reason {
	case "label":
		w.RefusedLabel.Add(1)
	case "key":
		w.RefusedKey.Add(1)
	}
	if reason != "" {
		level = zapcore.DebugLevel
		if !w.Closing.Load() {
			w.summarise(reason, msg)
		}
	}
	if w.Closing.Load() {
		level = zapcore.DebugLevel
	}
	if ce := w.log.Check(level, msg); ce != nil {
		ce.Write()
	}
	return len(p), nil
}

// summarise counts a refusal against its source and logs a warn summary of
// that source's refusals when its last one is refusalSummaryEvery old (the
// first refusal from a source is summarised at once).
func (w *Writer) summarise(reason, msg string) {
	src := refusalFrom(msg)
	now := w.now()
	w.mu.Lock()
	s := w.sources[src]
	if s == nil {
		if len(w.sources) >= maxRefusalSources {
			for k, o := range w.sources {
				if now.Sub(o.last) >= refusalSummaryEvery {
					delete(w.sources, k)
				}
			}
		}
		if len(w.sources) >= maxRefusalSources {
			src = "other"
			s = w.sources[src]
		}
		if s == nil {
			s = &refusalSource{}
			w.sources[src] = s
		}
	}
	if reason == "label" {
		s.label++
	} else {
		s.key++
	}
	if !s.last.IsZero() && now.Sub(s.last) < refusalSummaryEvery {
		w.mu.Unlock()
		return
	}
	label, key, since := s.label, s.key, s.last
	s.label, s.key, s.last = 0, 0, now
	w.mu.Unlock()
	fields := []zap.Field{zap.String("from", src), zap.Uint64("label", label), zap.Uint64("key", key), zap.String("last", msg)}
	if !since.IsZero() {
		fields = append(fields, zap.Duration("over", now.Sub(since)))
	}
	w.log.Warn("gossip refused packets or streams from a sender without this cluster's key or label (counted in siglake_gossip_refused_total; each at debug)", fields...)
}

// refusalFrom returns the host of memberlist's "from=ip:port" suffix (the
// port changes with each stream), or "unknown".
func refusalFrom(msg string) string {
	i := strings.LastIndex(msg, "from=")
	if i < 0 {
		return "unknown"
	}
	a := strings.TrimSpace(msg[i+len("from="):])
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// parseMemberlistLine extracts the level tag and the message. Lines without
// a known tag are logged at info so nothing is lost.
func parseMemberlistLine(s string) (zapcore.Level, string) {
	s = strings.TrimSpace(s)
	level := zapcore.InfoLevel
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 {
			switch s[1:end] {
			case "DEBUG", "TRACE":
				level = zapcore.DebugLevel
			case "INFO":
				level = zapcore.InfoLevel
			case "WARN":
				level = zapcore.WarnLevel
			case "ERR", "ERROR":
				level = zapcore.ErrorLevel
			}
			s = strings.TrimSpace(s[end+1:])
		}
	}
	s = strings.TrimPrefix(s, "memberlist: ")
	return level, s
}

// refusal classifies a memberlist log line that reports a packet or stream
// this member refused (inbound only: a member's own failed joins and
// push/pulls carry the same error words but are not refusals by it):
// "label" for another cluster label (or none), "key" for a payload no
// installed key decrypts or an unencrypted one. "" for any other line.
// memberlist reports these only in its log, so the wording is matched;
// TestRefusalsCounted fails if a memberlist upgrade changes it.
func refusal(msg string) string {
	switch {
	case strings.HasPrefix(msg, "discarding stream with unacceptable label"),
		strings.HasPrefix(msg, "discarding packet with unacceptable label"):
		return "label"
	case strings.HasPrefix(msg, "Decrypt packet failed"):
		return "key"
	case strings.HasPrefix(msg, "failed to receive") && KeyError(msg):
		return "key"
	}
	return ""
}

// KeyError reports whether msg carries one of memberlist's errors for a
// payload that no installed key decrypts, or for one side unencrypted.
func KeyError(msg string) bool {
	return strings.Contains(msg, "could decrypt") ||
		strings.Contains(msg, "remote state is not encrypted") ||
		strings.Contains(msg, "encryption is not configured")
}
