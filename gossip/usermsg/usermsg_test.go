package usermsg

import (
	"bytes"
	"strings"
	"testing"
)

func TestEnvelopeRoundTripCopies(t *testing.T) {
	msg := []byte("G{\"v\":1}")
	wire, err := Encode("siglake-ingest-7", msg)
	if err != nil {
		t.Fatal(err)
	}
	if wire[0] != 'G' {
		t.Fatalf("first byte on the wire is %q, want the kind", wire[0])
	}
	from, got, err := Decode(wire)
	if err != nil || from != "siglake-ingest-7" || !bytes.Equal(got, msg) {
		t.Fatalf("Decode = %q, %q, %v", from, got, err)
	}
	for i := range wire { // memberlist reuses its buffer after NotifyMsg
		wire[i] = 0
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("decoded message shares the wire buffer: %q", got)
	}
	// A message of the kind byte alone.
	wire, _ = Encode("a", []byte{'H'})
	if from, got, err := Decode(wire); err != nil || from != "a" || string(got) != "H" {
		t.Fatalf("kind only: %q %q %v", from, got, err)
	}
}

func TestEncodeRefuses(t *testing.T) {
	if _, err := Encode("a", nil); err == nil {
		t.Error("empty message encoded")
	}
	if _, err := Encode("", []byte("G")); err == nil {
		t.Error("message without a sender encoded")
	}
	if _, err := Encode("a", make([]byte, MaxBytes)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("oversized message: %v", err)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	good, _ := Encode("node-1", []byte("Gbody"))
	for name, wire := range map[string][]byte{
		"empty":          nil,
		"kind only":      {'G'},
		"other version":  append([]byte{'G', 9}, good[2:]...),
		"no name length": {'G', envelopeVersion},
		"empty name":     {'G', envelopeVersion, 0, 'x'},
		"name too long":  {'G', envelopeVersion, 10, 'a', 'b'},
		"bad varint":     {'G', envelopeVersion, 0xff, 0xff},
	} {
		if from, msg, err := Decode(wire); err == nil {
			t.Errorf("%s: Decode = %q %q, want an error", name, from, msg)
		}
	}
}

func TestRouterDispatchesAndCounts(t *testing.T) {
	var r Router
	var got []string
	r.Handle('G', func(from string, msg []byte) { got = append(got, from+":"+string(msg)) })
	g, _ := Encode("a", []byte("Gone"))
	z, _ := Encode("a", []byte("Zunknown"))
	r.Deliver(g)
	r.Deliver(z)
	r.Deliver([]byte{'G'})
	r.Handle('G', func(from string, msg []byte) { got = append(got, "replaced") })
	r.Deliver(g)
	if strings.Join(got, ",") != "a:Gone,replaced" {
		t.Fatalf("handled %q", got)
	}
	if s := r.Stats(); s != (Stats{Received: 2, UnknownKind: 1, Malformed: 1}) {
		t.Fatalf("stats %+v", s)
	}
}
