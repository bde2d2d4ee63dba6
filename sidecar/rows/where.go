package rows

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Condition is COLUMN IN (VALUES...); one value is an equality. Values are text in the column's
// type: strings as is, integers in decimal, booleans true/false.
type Condition struct {
	Column string   `json:"column"`
	Values []string `json:"values"`
}

// whereAccepted is the --where grammar, for errors.
const whereAccepted = `accepted: COLUMN=VALUE, several joined by AND (service=billing AND severity=debug); ` +
	`quote a value holding spaces or the word AND: COLUMN="a b"`

// ParseWhere parses one --where (the CLI, the WAL buffer's where=): COLUMN=VALUE conditions joined
// by AND (any case), each an equality; a value holding blanks is quoted ("a b" or 'a b'). What it
// cannot read (OR, !=, <, a dangling AND) is refused with the token: read as a value, it would make
// a deletion match nothing, or something else than asked. The value may be empty here;
// Filter.Check refuses an empty value.
func ParseWhere(s string) ([]Condition, error) {
	var out []Condition
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	for {
		c, after, err := parseCondition(s, rest)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		rest = strings.TrimLeftFunc(after, unicode.IsSpace)
		if rest == "" {
			return out, nil
		}
		tok := firstToken(rest)
		if !strings.EqualFold(tok, "AND") {
			return nil, fmt.Errorf("%q: token %q after %s's value: conditions are joined by AND only (for one of several values use --in COLUMN=V1,V2); %s",
				s, tok, c.Column, whereAccepted)
		}
		rest = strings.TrimLeftFunc(rest[len(tok):], unicode.IsSpace)
		if rest == "" {
			return nil, fmt.Errorf("%q: AND at the end: a condition must follow; %s", s, whereAccepted)
		}
	}
}

// parseCondition reads the COLUMN=VALUE at the start of rest (a part of s, named in errors) and
// returns it with what follows.
func parseCondition(s, rest string) (Condition, string, error) {
	i := strings.IndexFunc(rest, func(c rune) bool { return c == '=' || unicode.IsSpace(c) })
	if i <= 0 || rest[i] != '=' {
		return Condition{}, "", fmt.Errorf("%q: token %q is not COLUMN=VALUE; %s", s, firstToken(rest), whereAccepted)
	}
	col := rest[:i]
	if j := strings.IndexAny(col, "!<>()\"'"); j >= 0 {
		return Condition{}, "", fmt.Errorf("%q: token %q: the only comparison is = (equality); %s", s, col[j:]+"=", whereAccepted)
	}
	rest = rest[i+1:]
	var val string
	if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
		end := strings.IndexByte(rest[1:], rest[0])
		if end < 0 {
			return Condition{}, "", fmt.Errorf("%q: the quote of %s's value is not closed; %s", s, col, whereAccepted)
		}
		val, rest = rest[1:1+end], rest[2+end:]
		if c, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(c) {
			return Condition{}, "", fmt.Errorf("%q: token %q right after the quoted value of %s; %s", s, firstToken(rest), col, whereAccepted)
		}
		return Condition{Column: col, Values: []string{val}}, rest, nil
	}
	end := strings.IndexFunc(rest, unicode.IsSpace)
	if end < 0 {
		end = len(rest)
	}
	val, rest = rest[:end], rest[end:]
	if strings.HasPrefix(val, "=") {
		return Condition{}, "", fmt.Errorf("%q: token %q: the only comparison is = (equality); %s", s, col+"="+val[:1], whereAccepted)
	}
	if err := plainValue(val); err != nil {
		return Condition{}, "", fmt.Errorf("%q: token %q: %w; %s", s, col+"="+val, err, whereAccepted)
	}
	return Condition{Column: col, Values: []string{val}}, rest, nil
}

// plainValue refuses an unquoted value that holds an invisible separator (a zero-width space or
// another format character, which unicode.IsSpace does not count as a blank) or the word AND:
// text copied from a page can join two conditions with such characters, and read as one value
// the deletion would match nothing. A quoted value may hold anything.
func plainValue(v string) error {
	for _, c := range v {
		if unicode.IsSpace(c) || unicode.Is(unicode.Cf, c) {
			return fmt.Errorf("an unquoted value holds the invisible character %U (copied text?)", c)
		}
	}
	for _, w := range strings.FieldsFunc(v, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
		if strings.EqualFold(w, "AND") {
			return fmt.Errorf("an unquoted value holds the word AND: join conditions with blanks around AND, or quote the value")
		}
	}
	return nil
}

// firstToken is s up to its first blank (any Unicode space: a copied non-breaking space is one).
func firstToken(s string) string {
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i]
	}
	return s
}

// ParseIn parses COLUMN=V1,V2,..., the column is one of the values (`--in`, the buffer's in=);
// values cannot contain commas.
func ParseIn(s string) (Condition, error) {
	col, vals, ok := strings.Cut(s, "=")
	if !ok || col == "" || vals == "" {
		return Condition{}, fmt.Errorf("%q: accepted: COLUMN=V1,V2,...", s)
	}
	return Condition{Column: col, Values: strings.Split(vals, ",")}, nil
}
