package walwriter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/internal/durable"
)

// streamState is the content of the STREAM file. It is the only place
// that remembers which sequence numbers were handed out: the drain treats
// every segment at or below its recorded (incarnation, seq) mark as already
// committed, so a reused seq would make it silently skip new data.
type streamState struct {
	Stream      string `json:"stream"`
	Incarnation uint64 `json:"incarnation"`
	NextSeq     uint64 `json:"next_seq"`
}

// ReadStreamID returns the stream id recorded in dir's STREAM file, ok=false when there is none.
func ReadStreamID(dir string) (id string, ok bool, err error) {
	st, ok, err := readStreamState(dir)
	return st.Stream, ok, err
}

func readStreamState(dir string) (streamState, bool, error) {
	var st streamState
	path := filepath.Join(dir, localwal.StreamFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, false, fmt.Errorf("parsing %s: %w", path, err)
	}
	if !localwal.ValidStream(st.Stream) || st.Incarnation == 0 || st.NextSeq == 0 {
		return st, false, fmt.Errorf("%s holds invalid state %+v", path, st)
	}
	return st, true, nil
}

func writeStreamState(dir string, st streamState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding stream state: %w", err)
	}
	return durable.WriteFile(filepath.Join(dir, localwal.StreamFile), append(data, '\n'), 0o600)
}
