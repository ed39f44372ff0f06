// Package redisconn parses FASHIOND_REDIS_URL and makes the one Redis
// client the service uses: a plain client for a single Redis, or a
// Sentinel-aware failover client that follows the master through a
// failover. Every Redis connection of fashiond (the jobs service, asynq's
// client, server and inspector, the queue dashboard) shares the client made
// here, so there is one place that knows how to reach Redis.
//
// Accepted URLs:
//
//	redis://[[user]:password@]host:port[/db]    one Redis (go-redis's grammar)
//	rediss://[[user]:password@]host:port[/db]   the same over TLS
//	unix://[[user]:password@]/path/to/socket[?db=N]
//	host:port                                   shorthand for redis://host:port
//	redis+sentinel://[[user]:password@]host1[:port1][,host2[:port2]...]/mastername[?query]
//
// In the Sentinel form the hosts are Sentinels (port 26379 when omitted; an
// IPv6 address in brackets), mastername is the name the Sentinels monitor
// (one path segment, percent-encoded if needed), user and password are
// those of the master and its replicas, and the query may hold, each at
// most once:
//
//	db=N                    the database number (0..DefaultMaxDB, default 0)
//	sentinel_password=P     the Sentinels' own password (requirepass)
//	sentinel_username=U     the Sentinels' ACL user (needs sentinel_password)
//	wait_replicas=N         after a submission or a cancellation, confirm
//	                        with WAIT that N replicas (0..MaxWaitReplicas)
//	                        hold it before answering; default 0 (no WAIT)
//	wait_timeout=D          how long WAIT may take (a Go duration, 1ms..10s;
//	                        DefaultWaitTimeout)
//
// Any other query parameter is an error. Errors never repeat a password.
package redisconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelScheme is the URL scheme of a Sentinel-monitored Redis.
const SentinelScheme = "redis+sentinel"

// DefaultSentinelPort is a Sentinel's port when the URL gives none.
const DefaultSentinelPort = "26379"

// DefaultMaxDB is the highest database number accepted (Redis's default
// "databases 16").
const DefaultMaxDB = 15

// maxSentinels bounds the host list of a Sentinel URL.
const maxSentinels = 64

// Bounds and default of the WAIT settings (wait_replicas, wait_timeout).
const (
	MaxWaitReplicas    = 16
	DefaultWaitTimeout = 500 * time.Millisecond
	maxWaitTimeout     = 10 * time.Second
)

// Spec is a parsed Redis URL: exactly one of Single and Failover is set.
type Spec struct {
	// Single is the options of one Redis (redis://, rediss://, unix://).
	Single *redis.Options
	// Failover is the options of a Sentinel-monitored master.
	Failover *redis.FailoverOptions
	// WaitReplicas is how many replicas must acknowledge a submission or a
	// cancellation (WAIT) before it is answered; 0: none (Sentinel URLs'
	// wait_replicas).
	WaitReplicas int
	// WaitTimeout bounds that WAIT (wait_timeout; DefaultWaitTimeout).
	WaitTimeout time.Duration
}

// Parse parses a Redis URL of the forms in the package comment.
func Parse(raw string) (Spec, error) {
	if raw == "" {
		return Spec{}, errors.New("no Redis URL given")
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		raw, scheme = "redis://"+raw, "redis"
	}
	if strings.EqualFold(scheme, SentinelScheme) {
		spec := Spec{WaitTimeout: DefaultWaitTimeout}
		f, err := parseSentinel(raw, &spec)
		if err != nil {
			return Spec{}, err
		}
		spec.Failover = f
		return spec, nil
	}
	o, err := redis.ParseURL(raw)
	if err == nil && o.Network == "tcp" && !hasHost(raw) {
		err = errors.New("no host") // go-redis would take localhost:6379
	}
	if err != nil {
		return Spec{}, errors.New("not a redis://[:password@]host:port[/db], rediss://…, unix:///path or " +
			SentinelScheme + "://host:port[,host:port…]/mastername URL")
	}
	return Spec{Single: o}, nil
}

// hasHost reports whether a redis:// or rediss:// URL names a host.
func hasHost(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Hostname() != ""
}

// Sentinel reports whether the spec names a Sentinel-monitored master.
func (s Spec) Sentinel() bool { return s.Failover != nil }

// NewClient makes the client of the spec: redis.NewFailoverClient for a
// Sentinel URL (it asks the Sentinels for the master, and reconnects to the
// new master when they announce a failover), else redis.NewClient. Nil for
// a zero Spec. The caller closes it.
func (s Spec) NewClient() redis.UniversalClient {
	switch {
	case s.Failover != nil:
		o := *s.Failover
		return redis.NewFailoverClient(&o)
	case s.Single != nil:
		o := *s.Single
		return redis.NewClient(&o)
	}
	return nil
}

// Describe names where the spec connects, without any password: for logs.
func (s Spec) Describe() string {
	switch {
	case s.Failover != nil:
		return fmt.Sprintf("sentinel master %q via %s db %d wait %d replicas", s.Failover.MasterName,
			strings.Join(s.Failover.SentinelAddrs, ","), s.Failover.DB, s.WaitReplicas)
	case s.Single != nil:
		return fmt.Sprintf("%s %s db %d", s.Single.Network, s.Single.Addr, s.Single.DB)
	}
	return "no redis"
}

// parseSentinel parses the redis+sentinel:// form.
func parseSentinel(raw string, spec *Spec) (*redis.FailoverOptions, error) {
	rest := raw[len(SentinelScheme)+len("://"):]
	authority, path, _ := strings.Cut(rest, "/")
	path, query, _ := strings.Cut(path, "?")
	if i := strings.IndexAny(authority, "?#"); i >= 0 {
		return nil, errors.New(SentinelScheme + " URL: the master name is missing (…/mastername)")
	}
	o := &redis.FailoverOptions{}
	hosts := authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, pass, err := parseUserinfo(authority[:at])
		if err != nil {
			return nil, err
		}
		o.Username, o.Password, hosts = user, pass, authority[at+1:]
	}
	addrs, err := parseHosts(hosts)
	if err != nil {
		return nil, err
	}
	o.SentinelAddrs = addrs
	if o.MasterName, err = parseMaster(path); err != nil {
		return nil, err
	}
	if err := parseSentinelQuery(query, o, spec); err != nil {
		return nil, err
	}
	return o, nil
}

// parseUserinfo splits "[user]:password" (or "user"), percent-decoded.
func parseUserinfo(s string) (user, pass string, err error) {
	u, p, hasPass := strings.Cut(s, ":")
	if user, err = url.PathUnescape(u); err != nil {
		return "", "", errors.New(SentinelScheme + " URL: the user name is not percent-encoded correctly")
	}
	if hasPass {
		if pass, err = url.PathUnescape(p); err != nil {
			return "", "", errors.New(SentinelScheme + " URL: the password is not percent-encoded correctly")
		}
	}
	if strings.ContainsAny(user, "\x00\r\n") || strings.ContainsAny(pass, "\x00\r\n") {
		return "", "", errors.New(SentinelScheme + " URL: the user name or password holds a control character")
	}
	return user, pass, nil
}

// parseHosts parses the comma-separated Sentinel addresses.
func parseHosts(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New(SentinelScheme + " URL: no Sentinel address (host:port[,host:port…])")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxSentinels {
		return nil, fmt.Errorf("%s URL: more than %d Sentinel addresses", SentinelScheme, maxSentinels)
	}
	addrs := make([]string, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		a, err := parseHost(p)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, fmt.Errorf("%s URL: Sentinel %s is listed twice", SentinelScheme, a)
		}
		seen[a] = true
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// parseHost checks one "host[:port]" (IPv6 in brackets) and returns it
// as host:port.
func parseHost(p string) (string, error) {
	host, port := p, DefaultSentinelPort
	if h, pt, err := net.SplitHostPort(p); err == nil {
		host, port = h, pt
	} else if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
		host = p[1 : len(p)-1]
	} else if strings.Contains(p, ":") || strings.Contains(p, "[") {
		return "", fmt.Errorf("%s URL: Sentinel address %q is not host:port", SentinelScheme, p)
	}
	if host == "" || !validHostname(host) {
		return "", fmt.Errorf("%s URL: Sentinel address %q has no valid host", SentinelScheme, p)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Errorf("%s URL: Sentinel address %q: the port must be 1..65535", SentinelScheme, p)
	}
	return net.JoinHostPort(host, port), nil
}

// validHostname accepts an IP address or a DNS name of letters, digits,
// '-', '_' and '.'.
func validHostname(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if len(h) > 253 || strings.Contains(h, ":") {
		return false
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// parseMaster checks the master name path segment.
func parseMaster(path string) (string, error) {
	if path == "" {
		return "", errors.New(SentinelScheme + " URL: the master name is missing (…/mastername)")
	}
	name, err := url.PathUnescape(path)
	if err != nil || strings.Contains(name, "/") {
		return "", errors.New(SentinelScheme + " URL: the path must be one master name (…/mastername)")
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return "", errors.New(SentinelScheme + " URL: the master name holds a space or control character")
		}
	}
	return name, nil
}

// parseSentinelQuery applies the query parameters of a Sentinel URL.
func parseSentinelQuery(query string, o *redis.FailoverOptions, spec *Spec) error {
	q, err := url.ParseQuery(query)
	if err != nil {
		return errors.New(SentinelScheme + " URL: the query is not percent-encoded correctly")
	}
	for k, v := range q {
		if len(v) != 1 {
			return fmt.Errorf("%s URL: query parameter %q is given %d times", SentinelScheme, k, len(v))
		}
		switch k {
		case "db":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 || n > DefaultMaxDB {
				return fmt.Errorf("%s URL: db must be 0..%d", SentinelScheme, DefaultMaxDB)
			}
			o.DB = n
		case "sentinel_password":
			o.SentinelPassword = v[0]
		case "sentinel_username":
			o.SentinelUsername = v[0]
		case "wait_replicas":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 || n > MaxWaitReplicas {
				return fmt.Errorf("%s URL: wait_replicas must be 0..%d", SentinelScheme, MaxWaitReplicas)
			}
			spec.WaitReplicas = n
		case "wait_timeout":
			d, err := time.ParseDuration(v[0])
			if err != nil || d < time.Millisecond || d > maxWaitTimeout {
				return fmt.Errorf("%s URL: wait_timeout must be a duration from 1ms to %v", SentinelScheme, maxWaitTimeout)
			}
			spec.WaitTimeout = d
		default:
			return fmt.Errorf("%s URL: unknown query parameter %q (db, sentinel_password, sentinel_username, wait_replicas, wait_timeout)", SentinelScheme, k)
		}
	}
	if o.SentinelUsername != "" && o.SentinelPassword == "" {
		return errors.New(SentinelScheme + " URL: sentinel_username needs sentinel_password")
	}
	return nil
}
