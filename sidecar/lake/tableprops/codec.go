package tableprops

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Codec reads and writes the JSON values of one namespace: the value of one key, or of every key
// under a prefix. What it writes is exactly json.Marshal of the value, so the stored bytes are
// the Go type's field order and tags (docs/format/table-properties.md gives them).
type Codec[T any] struct {
	// Name is the key, or the prefix (ending in ".") of the namespace's keys.
	Name string
	// What names a value in errors: "fold specification"; its last word ("specification") names
	// it in short ones.
	What string
	// Version, when set, points at the value's format version; Decode refuses one outside
	// MinVersion..MaxVersion (a newer writer's value is never guessed at).
	Version                func(*T) *int
	MinVersion, MaxVersion int
	// Strict refuses fields the type does not know (values people write by hand: a misspelt
	// field must not be ignored).
	Strict bool
	// KeyOf, when set, is the key a value belongs under: a value stored under another key is
	// refused (a copied entry must not pass for another's).
	KeyOf func(T) string
	// Check, when set, vets a decoded value further (a required field, a known state).
	Check func(T) error
}

// Decode reads the value stored under key.
func (c Codec[T]) Decode(key, v string) (T, error) {
	var x T
	dec := json.NewDecoder(strings.NewReader(v))
	if c.Strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(&x)
	if err == nil {
		if _, trail := dec.Token(); !errors.Is(trail, io.EOF) {
			err = errors.New("data after the JSON value")
		}
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("table property %s: not a %s (JSON): %w", key, c.What, err)
	}
	if c.Version != nil {
		if ver := *c.Version(&x); ver < c.MinVersion || ver > c.MaxVersion {
			var zero T
			return zero, fmt.Errorf("table property %s: %s format version %d, this siglake reads %d..%d", key, c.noun(), ver, c.MinVersion, c.MaxVersion)
		}
	}
	if c.KeyOf != nil {
		if home := c.KeyOf(x); home != key {
			var zero T
			return zero, fmt.Errorf("table property %s: holds %s id %q, which belongs under %s", key, c.noun(), strings.TrimPrefix(home, c.Name), home)
		}
	}
	if c.Check != nil {
		if err := c.Check(x); err != nil {
			var zero T
			return zero, fmt.Errorf("table property %s: %w", key, err)
		}
	}
	return x, nil
}

// noun is What's last word.
func (c Codec[T]) noun() string { return c.What[strings.LastIndex(c.What, " ")+1:] }

// Encode is the stored form of x, as it is (Current stamps the version first).
func (c Codec[T]) Encode(x T) (string, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return "", fmt.Errorf("encode the %s: %w", c.What, err)
	}
	return string(b), nil
}

// Current is x at the newest format version this siglake writes.
func (c Codec[T]) Current(x T) T {
	if c.Version != nil {
		*c.Version(&x) = c.MaxVersion
	}
	return x
}

// Read reads the value of the namespace's one key from props; ok is false when props has none.
func (c Codec[T]) Read(props map[string]string) (x T, ok bool, err error) {
	v, ok := props[c.Name]
	if !ok {
		return x, false, nil
	}
	x, err = c.Decode(c.Name, v)
	return x, true, err
}

// Entry is one decoded value of a prefix namespace.
type Entry[T any] struct {
	Key   string // the whole key
	Name  string // the key after the prefix
	Value T
}

// List decodes every key of props under the namespace's prefix, sorted by key, and returns an
// error for each value that does not decode (those are left out).
func (c Codec[T]) List(props map[string]string) ([]Entry[T], []error) {
	var keys []string
	for k := range props {
		if strings.HasPrefix(k, c.Name) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []Entry[T]
	var errs []error
	for _, k := range keys {
		x, err := c.Decode(k, props[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Entry[T]{Key: k, Name: strings.TrimPrefix(k, c.Name), Value: x})
	}
	return out, errs
}
