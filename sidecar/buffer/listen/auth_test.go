package listen

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNewAuthNamesTheOption: a token file that cannot be read fails the start with the option's
// names, not every request.
func TestNewAuthNamesTheOption(t *testing.T) {
	if _, err := NewAuth(filepath.Join(t.TempDir(), "none"), false, nil, nil); err == nil || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_TOKEN_FILE") {
		t.Fatalf("a missing token file: %v", err)
	}
}
