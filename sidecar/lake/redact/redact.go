// Package redact hides the secrets of a catalog URI (passwords, secret query parameters, keyword
// DSN passwords) before the URI is logged or quoted in an error.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// masked replaces a secret in what URI returns.
const masked = "xxxxx"

// URI hides the secrets in a catalog URI before it is logged or returned in an error: the
// password of the user info, query parameters whose names say they hold a secret, and the values
// of password=... in a keyword DSN. What it cannot parse it masks rather than returns: a URI that
// fails to parse is usually one whose password holds a reserved character (a bare %, / or ?), so
// only the scheme and host are kept, when they can be found.
func URI(uri string) string {
	if !strings.Contains(uri, "://") {
		if keywordSecret.MatchString(uri) {
			return keywordSecret.ReplaceAllString(uri, "${1}="+masked)
		}
		if strings.Contains(uri, "@") { // an opaque form with user info (scheme:user:pass@host)
			return redactUnparsed(uri)
		}
		return uri // sqlite:PATH and the like carry no secret
	}
	// More than one @, or a # or ? before the last one, means a password holding reserved
	// characters: the parser would split it elsewhere (postgres://u:p@ss#word@h/db has the host
	// "ss"), so its pieces cannot be trusted to hold the secret.
	if at := strings.LastIndex(uri, "@"); at >= 0 && (strings.Count(uri, "@") > 1 || strings.ContainsAny(uri[:at], "#?")) {
		return redactUnparsed(uri)
	}
	u, err := url.Parse(uri)
	// An @ that did not end up in the user info means the parser split the URI elsewhere (a /
	// inside the password).
	if err != nil || (u.User == nil && strings.Contains(uri, "@")) {
		return redactUnparsed(uri)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), masked)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = masked
		} else {
			for k := range q {
				if secretName(k) {
					q[k] = []string{masked}
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	if u.Fragment != "" { // a catalog URI has no use for one; a split password may sit there
		u.Fragment, u.RawFragment = masked, ""
	}
	return u.String()
}

// redactUnparsed keeps the scheme and the host of a URI that does not parse and masks the rest.
func redactUnparsed(uri string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		scheme, rest, ok = strings.Cut(uri, ":")
		if !ok || !validScheme(scheme) {
			return "<redacted>"
		}
		scheme = scheme + ":"
	} else {
		if !validScheme(scheme) {
			return "<redacted>"
		}
		scheme = scheme + "://"
	}
	// The host follows the last @ (a password may hold / ? # but the host does not hold @).
	user := ""
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		user, rest = masked+"@", rest[i+1:]
	}
	host := rest
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if !hostPort.MatchString(host) {
		return scheme + user + "<redacted>"
	}
	tail := ""
	if len(host) < len(rest) {
		tail = "/<redacted>"
	}
	return scheme + user + host + tail
}

var (
	// keywordSecret finds password=value in a keyword DSN (host=h user=u password='p w'). As in
	// libpq, a value runs to the next whitespace that no backslash escapes (a\ b is one value), or
	// is quoted; & and ; are part of it.
	keywordSecret = regexp.MustCompile(`(?i)\b([a-z_]*(?:password|passwd|pwd|secret|token)[a-z_]*)\s*=\s*(?:'(?:[^'\\]|\\[\s\S])*'|"(?:[^"\\]|\\[\s\S])*"|(?:[^\s\\]|\\[\s\S]?)*)`)
	hostPort      = regexp.MustCompile(`^[A-Za-z0-9.\-\[\]]+(:[0-9]+)?$`)
)

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// secretName says whether a query parameter's name says it holds a secret.
func secretName(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"pass", "pwd", "secret", "token", "credential", "key", "auth", "signature"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
