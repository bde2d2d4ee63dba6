package mllog

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRefusalsCounted feeds the adapter memberlist v0.7.0's own log lines
// (the format strings of net.go and security.go, filled in) and checks that
// each inbound refusal is classified and counted, and that a member's own
// failed join or push/pull, which carries the same error words, is not.
func TestRefusalsCounted(t *testing.T) {
	const from = "from=10.1.2.3:40123"
	lines := []struct{ line, want string }{
		// net.go handleConn: a stream with another label (or none).
		{fmt.Sprintf("[ERR] memberlist: discarding stream with unacceptable label %q: %s", "staging", from), "label"},
		// net.go ingestPacket: a packet with another label.
		{fmt.Sprintf("[ERR] memberlist: discarding packet with unacceptable label %q: %s", "", from), "label"},
		// net.go ingestPacket: no installed key decrypts the packet (security.go's error).
		{fmt.Sprintf("[ERR] memberlist: Decrypt packet failed: %v %s", "no installed keys could decrypt the message", from), "key"},
		// net.go handleConn: readStream's errors for an inbound stream.
		{fmt.Sprintf("[ERR] memberlist: failed to receive: %s %s", "remote state is encrypted and encryption is not configured", from), "key"},
		{fmt.Sprintf("[ERR] memberlist: failed to receive: %s %s", "encryption is configured but remote state is not encrypted", from), "key"},
		{fmt.Sprintf("[ERR] memberlist: failed to receive: %s %s", "no installed keys could decrypt the message", from), "key"},
		// This member's own outbound failures: not refusals by it.
		{"[DEBUG] memberlist: failed to join 10.1.2.3:7946: no installed keys could decrypt the message", ""},
		{"[ERR] memberlist: Push/Pull with b failed: remote state is encrypted and encryption is not configured", ""},
		{"[ERR] memberlist: failed to receive: EOF " + from, ""},
		{"[WARN] memberlist: Was able to connect to b over TCP but UDP probes failed, network may be misconfigured", ""},
	}
	var wantLabel, wantKey uint64
	_, w := New(zap.NewNop())
	for _, l := range lines {
		_, msg := parseMemberlistLine(l.line)
		if got := refusal(msg); got != l.want {
			t.Errorf("refusal(%q) = %q, want %q", msg, got, l.want)
		}
		switch l.want {
		case "label":
			wantLabel++
		case "key":
			wantKey++
		}
		_, _ = w.Write([]byte(l.line + "\n"))
	}
	if w.RefusedLabel.Load() != wantLabel || w.RefusedKey.Load() != wantKey {
		t.Fatalf("counted label %d key %d, want %d %d", w.RefusedLabel.Load(), w.RefusedKey.Load(), wantLabel, wantKey)
	}
}

// TestRefusalFloodLogsLittle: 1,000 refused packets from one sender (and
// some from a second) give one warn summary per sender per minute, each
// refusal itself at debug, and every one counted.
func TestRefusalFloodLogsLittle(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	_, w := New(zap.New(core))
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	for i := range 1000 {
		from := fmt.Sprintf("10.0.0.9:%d", 30000+i)
		if i%10 == 0 {
			from = "10.0.0.8:7946"
		}
		line := fmt.Sprintf("[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=%s\n", from)
		_, _ = w.Write([]byte(line))
		now = now.Add(10 * time.Millisecond) // 10 s in all
	}
	loud := logs.Filter(func(e observer.LoggedEntry) bool { return e.Level >= zapcore.WarnLevel }).All()
	if len(loud) != 2 {
		t.Fatalf("%d lines at warn or above for 1,000 refusals from 2 senders, want 2 (one per sender): %v", len(loud), loud)
	}
	if got := w.RefusedKey.Load(); got != 1000 {
		t.Fatalf("counted %d refusals, want 1000", got)
	}
	// A minute later the next refusal summarises what came since.
	now = now.Add(time.Minute)
	_, _ = w.Write([]byte("[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.0.0.9:1\n"))
	loud = logs.Filter(func(e observer.LoggedEntry) bool { return e.Level >= zapcore.WarnLevel }).All()
	if len(loud) != 3 {
		t.Fatalf("%d warn lines after a minute, want 3", len(loud))
	}
	if n := loud[2].ContextMap()["key"]; n != uint64(900) {
		t.Fatalf("summary counts %v key refusals, want 900 (899 since the first summary, and this one)", n)
	}
}

func TestParseMemberlistLine(t *testing.T) {
	cases := map[string]struct {
		level zapcore.Level
		msg   string
	}{
		"[DEBUG] memberlist: Stream connection from=127.0.0.1:1\n": {zapcore.DebugLevel, "Stream connection from=127.0.0.1:1"},
		"[WARN] memberlist: Refuting a suspect message":            {zapcore.WarnLevel, "Refuting a suspect message"},
		"[ERR] memberlist: Failed to send ping":                    {zapcore.ErrorLevel, "Failed to send ping"},
		"[INFO] memberlist: Suspect node-1 has failed":             {zapcore.InfoLevel, "Suspect node-1 has failed"},
		"plain line": {zapcore.InfoLevel, "plain line"},
	}
	for in, want := range cases {
		l, m := parseMemberlistLine(in)
		if l != want.level || m != want.msg {
			t.Errorf("%q -> %v %q", in, l, m)
		}
	}
}
