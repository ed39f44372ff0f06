// Package fetch loads user-supplied images (http(s) URLs and data URIs) under
// the service's network and size rules, and provides the SSRF-safe HTTP
// client used for image fetches and webhook delivery.
//
// The address check happens in the dialer's Control hook, that is on the IP
// the connection is actually made to, after DNS resolution. DNS rebinding and
// redirects to internal addresses are therefore refused like literal
// internal addresses.
package fetch

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Policy is the set of limits for outbound fetches. Zero fields take the
// values of DefaultPolicy.
type Policy struct {
	// Allow lists prefixes that are reachable although a rule refuses them
	// (e.g. 127.0.0.0/8 for a local test server, 10.0.0.0/8 for an internal
	// object store). Set from FASHIOND_FETCH_ALLOW with ParseAllow.
	Allow []netip.Prefix
	// ConnectTimeout bounds one TCP connect; TotalTimeout bounds the whole
	// request including redirects and reading the body.
	ConnectTimeout, TotalTimeout time.Duration
	// MaxBytes is the largest image (encoded bytes) accepted.
	MaxBytes int64
	// MaxRedirects is the number of redirects followed (0 means the
	// default 3; a negative value follows none).
	MaxRedirects int
	// MaxPixels and MaxSide bound the decoded image, checked from the header
	// before decoding.
	MaxPixels int
	MaxSide   int
}

// Default limits.
const (
	DefaultMaxBytes       = 25 << 20
	DefaultMaxRedirects   = 3
	DefaultMaxPixels      = 50_000_000
	DefaultMaxSide        = 12000
	DefaultConnectTimeout = 10 * time.Second
	DefaultTotalTimeout   = 60 * time.Second
)

// DefaultPolicy is 25 MiB, 3 redirects, 50 MP, 12000 px per side, 10 s
// connect and 60 s total, and nothing internal allowed.
func DefaultPolicy() Policy {
	return Policy{
		ConnectTimeout: DefaultConnectTimeout,
		TotalTimeout:   DefaultTotalTimeout,
		MaxBytes:       DefaultMaxBytes,
		MaxRedirects:   DefaultMaxRedirects,
		MaxPixels:      DefaultMaxPixels,
		MaxSide:        DefaultMaxSide,
	}
}

// withDefaults fills zero fields from DefaultPolicy. A negative MaxRedirects
// means "follow none".
func (p Policy) withDefaults() Policy {
	d := DefaultPolicy()
	if p.ConnectTimeout <= 0 {
		p.ConnectTimeout = d.ConnectTimeout
	}
	if p.TotalTimeout <= 0 {
		p.TotalTimeout = d.TotalTimeout
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = d.MaxBytes
	}
	if p.MaxRedirects == 0 {
		p.MaxRedirects = d.MaxRedirects
	} else if p.MaxRedirects < 0 {
		p.MaxRedirects = 0
	}
	if p.MaxPixels <= 0 {
		p.MaxPixels = d.MaxPixels
	}
	if p.MaxSide <= 0 {
		p.MaxSide = d.MaxSide
	}
	return p
}

// ParseAllow parses a comma-separated list of CIDR prefixes or single
// addresses ("127.0.0.0/8, 10.1.2.3, fd00::/8"). Empty input gives nil.
func ParseAllow(csv string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(csv, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("fetch allow list: %q is not a CIDR prefix: %v", f, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("fetch allow list: %q is neither an address nor a CIDR prefix: %v", f, err)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// RefusedError says which rule refused which address.
type RefusedError struct {
	Addr netip.Addr
	Rule string // e.g. "loopback (127.0.0.0/8)"
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("address %s is refused: %s; fetches reach public addresses only (operators can allow a range with FASHIOND_FETCH_ALLOW)", e.Addr, e.Rule)
}

type rule struct {
	prefix netip.Prefix
	name   string
}

func mustRules(spec [][2]string) []rule {
	out := make([]rule, len(spec))
	for i, s := range spec {
		out[i] = rule{netip.MustParsePrefix(s[0]), s[1]}
	}
	return out
}

// Refused ranges. IPv4-mapped, NAT64 and 6to4 IPv6 forms are checked
// against the IPv4 table through the IPv4 address they embed.
var (
	rulesV4 = mustRules([][2]string{
		{"0.0.0.0/8", "unspecified / this-network"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "carrier-grade NAT"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (includes the 169.254.169.254 cloud metadata address)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"255.255.255.255/32", "broadcast"},
		{"240.0.0.0/4", "reserved"},
	})
	rulesV6 = mustRules([][2]string{
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"100::/64", "discard-only"},
		{"2001:db8::/32", "documentation"},
		{"fc00::/7", "private (unique local)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	})
	prefixMapped = netip.MustParsePrefix("::ffff:0:0/96")
	prefixNAT64  = netip.MustParsePrefix("64:ff9b::/96")
	prefix6to4   = netip.MustParsePrefix("2002::/16")
)

// CheckAddr returns nil when a connection to addr is permitted by p, else a
// *RefusedError naming the rule.
func (p Policy) CheckAddr(addr netip.Addr) error {
	addr = addr.WithZone("")
	for _, a := range p.Allow {
		if a.Contains(addr) || (addr.Is4In6() && a.Contains(addr.Unmap())) {
			return nil
		}
	}
	if !addr.IsValid() {
		return &RefusedError{Addr: addr, Rule: "invalid address"}
	}
	if addr.Is4() {
		return checkV4(addr, addr, "")
	}
	switch {
	case prefixMapped.Contains(addr):
		return checkV4(addr, addr.Unmap(), "IPv4-mapped IPv6 form of ")
	case prefixNAT64.Contains(addr):
		b := addr.As16()
		return checkV4(addr, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64 form of ")
	case prefix6to4.Contains(addr):
		b := addr.As16()
		return checkV4(addr, netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4 form of ")
	}
	for _, r := range rulesV6 {
		if r.prefix.Contains(addr) {
			return &RefusedError{Addr: addr, Rule: fmt.Sprintf("%s (%s)", r.name, r.prefix)}
		}
	}
	return nil
}

func checkV4(orig, v4 netip.Addr, form string) error {
	for _, r := range rulesV4 {
		if r.prefix.Contains(v4) {
			return &RefusedError{Addr: orig, Rule: fmt.Sprintf("%s%s (%s)", form, r.name, r.prefix)}
		}
	}
	return nil
}
