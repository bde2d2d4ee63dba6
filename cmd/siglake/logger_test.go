package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar"
)

// TestLoggerStackTraces: the logger the compactor and the CLI build puts a stack trace on no
// error or warning line, in either format; a DPanic still carries one (a panic is a bug).
func TestLoggerStackTraces(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		path := filepath.Join(t.TempDir(), "stderr")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		saved := os.Stderr
		os.Stderr = f // zap opens "stderr" as os.Stderr when the logger is built
		log, err := sidecar.NewLogger(format, "info")
		os.Stderr = saved
		if err != nil {
			t.Fatal(err)
		}
		log.Warn("a warning", zap.Error(errors.New("cause")))
		log.Error("an error", zap.Error(errors.New("cause")))
		_ = log.Sync()
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), "stacktrace") || strings.Contains(string(b), "testing.tRunner") {
			t.Errorf("%s: warning or error line with a stack trace:\n%s", format, b)
		}
		if !strings.Contains(string(b), "an error") {
			t.Errorf("%s: the error line is missing:\n%s", format, b)
		}
		f.Truncate(0)
		func() {
			defer func() { _ = recover() }()
			log.DPanic("a bug")
		}()
		_ = log.Sync()
		b, _ = os.ReadFile(path)
		if !strings.Contains(string(b), "testing.tRunner") {
			t.Errorf("%s: a DPanic line without its stack trace:\n%s", format, b)
		}
		f.Close()
	}
}
