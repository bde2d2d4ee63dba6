package gossip

import (
	"log"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// memberlist logs through a *log.Logger with lines like
// "[WARN] memberlist: Was able to connect to x over TCP but UDP probes
// failed". zapWriter turns each line into a zap entry at the matching level.
type zapWriter struct {
	log *zap.Logger
	// closing demotes everything to debug once shutdown has begun:
	// memberlist's loops run on briefly after its sockets close and log
	// each failed send as an error.
	closing atomic.Bool
	// refusedLabel and refusedKey count packets and streams memberlist
	// refused for another cluster label or a key it lacks: what an outsider
	// trying to join looks like (docs/gossip.md).
	refusedLabel, refusedKey atomic.Uint64
}

func newMemberlistLogger(l *zap.Logger) (*log.Logger, *zapWriter) {
	w := &zapWriter{log: l.Named("memberlist")}
	return log.New(w, "", 0), w
}

func (w *zapWriter) Write(p []byte) (int, error) {
	level, msg := parseMemberlistLine(string(p))
	switch refusal(msg) {
	case "label":
		w.refusedLabel.Add(1)
	case "key":
		w.refusedKey.Add(1)
	}
	if w.closing.Load() {
		level = zapcore.DebugLevel
	}
	if ce := w.log.Check(level, msg); ce != nil {
		ce.Write()
	}
	return len(p), nil
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
