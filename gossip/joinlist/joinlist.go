// Package joinlist is the gossip join list: the syntax of its entries
// ("host:port", a bare host or IP, a DNS name) and their resolution to the
// addresses a member joins.
package joinlist

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Parse splits a comma-separated join list, dropping blanks.
func Parse(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseHostPort parses "host:port", "[v6]:port", ":port", or a bare host
// or IP (which gets defPort). The host must be an IP address or empty.
func ParseHostPort(s string, defPort int) (host string, port int, err error) {
	host, port, err = Split(s, defPort)
	if err != nil {
		return "", 0, err
	}
	if host != "" && net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("%q is not an IP address", host)
	}
	return host, port, nil
}

// Split splits a join entry into host (IP or DNS name) and port; an entry
// without a port gets defPort.
func Split(s string, defPort int) (string, int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", 0, errors.New("empty address")
	}
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		// No port: a bare host, IPv4, or IPv6 (with or without brackets).
		h := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		if strings.ContainsAny(h, "[]/ ") {
			return "", 0, fmt.Errorf("cannot parse %q as host or host:port", s)
		}
		if strings.Contains(h, ":") && net.ParseIP(h) == nil {
			return "", 0, fmt.Errorf("cannot parse %q as host or host:port", s)
		}
		return h, defPort, nil
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", ps)
	}
	if strings.ContainsAny(host, "/ ") {
		return "", 0, fmt.Errorf("cannot parse host %q", host)
	}
	return host, port, nil
}

// LookupIP resolves a DNS name to all its addresses (net.Resolver.LookupIP
// with network "ip").
type LookupIP func(ctx context.Context, host string) ([]net.IP, error)

// Resolve turns join entries into ip:port strings, each once. A DNS name
// yields every address it resolves to (a Kubernetes headless Service names
// every ready pod). An entry that does not parse or resolve counts in
// failed; unresolved, when set, is told about each name that did not
// resolve.
func Resolve(ctx context.Context, entries []string, defPort int, lookup LookupIP,
	unresolved func(entry string, err error)) (addrs []string, failed int) {
	seen := map[string]bool{}
	add := func(ip net.IP, port int) {
		a := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, entry := range entries {
		host, port, err := Split(entry, defPort)
		if err != nil { // configurations are validated before; kept for safety
			failed++
			continue
		}
		if ip := net.ParseIP(host); ip != nil {
			add(ip, port)
			continue
		}
		ips, err := lookup(ctx, strings.TrimSuffix(host, "."))
		if err != nil || len(ips) == 0 {
			failed++
			if unresolved != nil {
				unresolved(entry, err)
			}
			continue
		}
		for _, ip := range ips {
			add(ip, port)
		}
	}
	return addrs, failed
}
