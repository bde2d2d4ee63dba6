package localwal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

func readStreamState(dir string) (streamState, bool, error) {
	var st streamState
	path := filepath.Join(dir, StreamFile)
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
	if !ValidStream(st.Stream) || st.Incarnation == 0 || st.NextSeq == 0 {
		return st, false, fmt.Errorf("%s holds invalid state %+v", path, st)
	}
	return st, true, nil
}

func writeStreamState(dir string, st streamState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding stream state: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, StreamFile), append(data, '\n'))
}

// maxIncarnationOnDisk returns the largest incarnation named by any
// segment file in dir or its quarantine, sealed or open. A new incarnation
// must exceed it even if the clock went backwards after STREAM was lost.
func maxIncarnationOnDisk(dir string) (uint64, error) {
	var max uint64
	for _, d := range []string{dir, filepath.Join(dir, QuarantineDir)} {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) && d != dir {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", d, err)
		}
		for _, e := range ents {
			if p, ok := parseName(e.Name()); ok && p.incarnation > max {
				max = p.incarnation
			}
		}
	}
	return max, nil
}
