package fetch

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength is the longest URL accepted (presigned object-store URLs
// stay well below it).
const MaxURLLength = 8192

// NewClient returns an http.Client that only connects to addresses p
// permits (checked on the resolved IP at connect time), follows at most
// p.MaxRedirects redirects to http/https URLs, ignores proxy environment
// variables, and applies p's connect and total timeouts.
func NewClient(p Policy) *http.Client {
	p = p.withDefaults()
	dialer := &net.Dialer{
		Timeout:   p.ConnectTimeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			return p.checkDial(network, address)
		},
	}
	tr := &http.Transport{
		// Proxy stays nil: a proxy would make the Control hook check the
		// proxy's address instead of the target's.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   p.ConnectTimeout,
		ResponseHeaderTimeout: p.TotalTimeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   p.TotalTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > p.MaxRedirects {
				return &RedirectError{Msg: fmt.Sprintf("stopped after %d redirects (the limit is %d)", len(via)-1, p.MaxRedirects)}
			}
			if err := checkURL(req.URL); err != nil {
				return &RedirectError{Msg: "redirect to " + redactURL(req.URL) + " refused: " + err.Error()}
			}
			// The literal-IP check is repeated here for a clearer message;
			// the dialer checks every address anyway.
			if err := p.checkLiteralHost(req.URL.Hostname()); err != nil {
				return &RedirectError{Msg: "redirect to " + redactURL(req.URL) + " refused: " + err.Error(), Err: err}
			}
			return nil
		},
	}
}

// RedirectError is a refused redirect (too many, bad scheme, refused
// address).
type RedirectError struct {
	Msg string
	Err error
}

func (e *RedirectError) Error() string { return e.Msg }
func (e *RedirectError) Unwrap() error { return e.Err }

func (p Policy) checkDial(network, address string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("network %q is refused: only TCP is used for fetches", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("cannot parse dial address %q: %v", address, err)
	}
	return p.CheckAddr(ap.Addr())
}

func (p Policy) checkLiteralHost(host string) error {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		// "localhost" and *.localhost always mean loopback (RFC 6761);
		// other names are checked after resolution by the dialer.
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return p.CheckAddr(netip.AddrFrom4([4]byte{127, 0, 0, 1}))
		}
		return nil
	}
	return p.CheckAddr(a)
}

// CheckURLSyntax checks that raw is an absolute http or https URL with a
// host, no longer than MaxURLLength. It does no DNS lookup.
func CheckURLSyntax(raw string) error {
	if raw == "" {
		return errors.New("the URL is empty")
	}
	if len(raw) > MaxURLLength {
		return fmt.Errorf("the URL is %d characters long, the limit is %d", len(raw), MaxURLLength)
	}
	if strings.TrimSpace(raw) != raw {
		return errors.New("the URL has leading or trailing spaces")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the URL cannot be parsed: %v", trimURLErr(err))
	}
	return checkURL(u)
}

func checkURL(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return errors.New("the URL is not absolute: it must start with http:// or https://")
	default:
		return fmt.Errorf("the URL scheme %q is not allowed: use http or https", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if port := u.Port(); port != "" {
		n := 0
		for _, c := range port {
			n = n*10 + int(c-'0')
			if n > 65535 {
				break
			}
		}
		if n < 1 || n > 65535 {
			return fmt.Errorf("the URL port %q is out of range", port)
		}
	}
	return nil
}

// CheckURL is CheckURLSyntax plus, when the host is a literal IP address
// or localhost, the address rules of p. Other host names are only checked
// when connecting (after DNS resolution).
func (p Policy) CheckURL(raw string) error {
	if err := CheckURLSyntax(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	return p.checkLiteralHost(u.Hostname())
}

// trimURLErr drops the URL itself from url.Parse errors (it may be long or
// carry secrets); the caller names the field.
func trimURLErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL prints scheme://host/path without query or user info.
func redactURL(u *url.URL) string {
	s := u.Scheme + "://" + u.Host + u.EscapedPath()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// RedactURL returns raw as scheme://host/path, without user info, query or
// fragment, for logs and messages (they may carry tokens).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return redactURL(u)
}
