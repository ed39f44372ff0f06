// Package redisconn parses FASHIOND_REDIS_URL and makes the one Redis
// client the service uses: a plain client for a single Redis, a
// Sentinel-aware failover client that follows the master through a
// failover, or a Redis Cluster client that routes each command to the
// shard owning its key. Every Redis connection of fashiond (the jobs service, asynq's
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
//	redis+cluster://[[user]:password@]host1[:port1][,host2[:port2]...][/][?query]
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
// In the Cluster form the hosts are seed nodes of the cluster (any of its
// nodes; port 6379 when omitted; the client learns the others with
// CLUSTER SLOTS), user and password are those of every node, and the
// query may hold wait_replicas and wait_timeout (as above: the WAIT runs
// on the master of each shard the write went to). A Cluster has only
// database 0, so db is refused.
//
// Any other query parameter is an error. Errors never repeat a password.
package redisconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelScheme is the URL scheme of a Sentinel-monitored Redis.
const SentinelScheme = "redis+sentinel"

// DefaultSentinelPort is a Sentinel's port when the URL gives none.
const DefaultSentinelPort = "26379"

// ClusterScheme is the URL scheme of a Redis Cluster.
const ClusterScheme = "redis+cluster"

// DefaultClusterPort is a Cluster node's port when the URL gives none.
const DefaultClusterPort = "6379"

// DefaultMaxDB is the highest database number accepted (Redis's default
// "databases 16").
const DefaultMaxDB = 15

// maxHosts bounds the host list of a Sentinel or Cluster URL.
const maxHosts = 64

// Bounds and default of the WAIT settings (wait_replicas, wait_timeout).
const (
	MaxWaitReplicas    = 16
	DefaultWaitTimeout = 500 * time.Millisecond
	maxWaitTimeout     = 10 * time.Second
)

// Spec is a parsed Redis URL: exactly one of Single, Failover and Cluster
// is set.
type Spec struct {
	// Single is the options of one Redis (redis://, rediss://, unix://).
	Single *redis.Options
	// Failover is the options of a Sentinel-monitored master.
	Failover *redis.FailoverOptions
	// Cluster is the options of a Redis Cluster (redis+cluster://).
	Cluster *redis.ClusterOptions
	// WaitReplicas is how many replicas must acknowledge a submission or a
	// cancellation (WAIT) before it is answered; 0: none (Sentinel and
	// Cluster URLs' wait_replicas).
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
	if strings.EqualFold(scheme, ClusterScheme) {
		spec := Spec{WaitTimeout: DefaultWaitTimeout}
		c, err := parseCluster(raw, &spec)
		if err != nil {
			return Spec{}, err
		}
		spec.Cluster = c
		return spec, nil
	}
	o, err := redis.ParseURL(raw)
	if err == nil && o.Network == "tcp" && !hasHost(raw) {
		err = errors.New("no host") // go-redis would take localhost:6379
	}
	if err != nil {
		return Spec{}, errors.New("not a redis://[:password@]host:port[/db], rediss://…, unix:///path, " +
			SentinelScheme + "://host:port[,host:port…]/mastername or " + ClusterScheme + "://host:port[,host:port…] URL")
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

// Clustered reports whether the spec names a Redis Cluster.
func (s Spec) Clustered() bool { return s.Cluster != nil }

// NewClient makes the client of the spec: redis.NewFailoverClient for a
// Sentinel URL (it asks the Sentinels for the master, and reconnects to the
// new master when they announce a failover), redis.NewClusterClient for a
// Cluster URL (a *redis.ClusterClient: it learns the slot map from the seed
// nodes and follows MOVED/ASK redirections), else redis.NewClient. Nil for
// a zero Spec. The caller closes it.
func (s Spec) NewClient() redis.UniversalClient {
	switch {
	case s.Failover != nil:
		o := *s.Failover
		return redis.NewFailoverClient(&o)
	case s.Cluster != nil:
		o := *s.Cluster
		o.Addrs = slices.Clone(o.Addrs)
		return redis.NewClusterClient(&o)
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
	case s.Cluster != nil:
		return fmt.Sprintf("cluster via %s wait %d replicas", strings.Join(s.Cluster.Addrs, ","), s.WaitReplicas)
	case s.Single != nil:
		return fmt.Sprintf("%s %s db %d", s.Single.Network, s.Single.Addr, s.Single.DB)
	}
	return "no redis"
}

// hostList describes the host list of a multi-host URL form, for parsing
// and for error messages.
type hostList struct {
	scheme string // SentinelScheme or ClusterScheme
	noun   string // what a host is: "Sentinel" or "node"
	port   string // the port when a host gives none
}

var (
	sentinelHosts = hostList{SentinelScheme, "Sentinel", DefaultSentinelPort}
	clusterHosts  = hostList{ClusterScheme, "node", DefaultClusterPort}
)

// splitAuthority splits "[userinfo@]hosts" (after the scheme, up to the
// path) into percent-decoded user and password and the host list.
func (h hostList) splitAuthority(authority string) (user, pass, hosts string, err error) {
	hosts = authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if user, pass, err = h.parseUserinfo(authority[:at]); err != nil {
			return "", "", "", err
		}
		hosts = authority[at+1:]
	}
	return user, pass, hosts, nil
}

// checkAfterAuthority refuses an '@' after the host list: it means a
// user name or password held a raw '/', '?' or '#' that ended the
// authority early. The error does not repeat the text, which holds
// part of the password.
func (h hostList) checkAfterAuthority(tail string) error {
	if strings.Contains(tail, "@") {
		return errors.New(h.scheme + " URL: an '@' after the host list: percent-encode '/', '?', '#' and '@' in the user name and password")
	}
	return nil
}

// parseSentinel parses the redis+sentinel:// form.
func parseSentinel(raw string, spec *Spec) (*redis.FailoverOptions, error) {
	rest := raw[len(SentinelScheme)+len("://"):]
	authority, path, _ := strings.Cut(rest, "/")
	if err := sentinelHosts.checkAfterAuthority(path); err != nil {
		return nil, err
	}
	path, query, _ := strings.Cut(path, "?")
	if i := strings.IndexAny(authority, "?#"); i >= 0 {
		return nil, errors.New(SentinelScheme + " URL: the master name is missing (…/mastername)")
	}
	o := &redis.FailoverOptions{}
	user, pass, hosts, err := sentinelHosts.splitAuthority(authority)
	if err != nil {
		return nil, err
	}
	o.Username, o.Password = user, pass
	if o.SentinelAddrs, err = sentinelHosts.parseHosts(hosts); err != nil {
		return nil, err
	}
	if o.MasterName, err = parseMaster(path); err != nil {
		return nil, err
	}
	if err := parseSentinelQuery(query, o, spec); err != nil {
		return nil, err
	}
	return o, nil
}

// parseCluster parses the redis+cluster:// form: seed nodes, no path
// (an empty "/" is allowed), the WAIT settings in the query.
func parseCluster(raw string, spec *Spec) (*redis.ClusterOptions, error) {
	rest := raw[len(ClusterScheme)+len("://"):]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if err := clusterHosts.checkAfterAuthority(tail); err != nil {
		return nil, err
	}
	path, query, _ := strings.Cut(tail, "?")
	if (path != "" && path != "/") || strings.Contains(query, "#") {
		return nil, errors.New(ClusterScheme + " URL: a Cluster URL has no path or fragment (a Cluster has only database 0; give host:port[,host:port…][?query])")
	}
	o := &redis.ClusterOptions{}
	user, pass, hosts, err := clusterHosts.splitAuthority(authority)
	if err != nil {
		return nil, err
	}
	o.Username, o.Password = user, pass
	if o.Addrs, err = clusterHosts.parseHosts(hosts); err != nil {
		return nil, err
	}
	if err := parseClusterQuery(query, spec); err != nil {
		return nil, err
	}
	return o, nil
}

// parseUserinfo splits "[user]:password" (or "user"), percent-decoded.
func (h hostList) parseUserinfo(s string) (user, pass string, err error) {
	u, p, hasPass := strings.Cut(s, ":")
	if user, err = url.PathUnescape(u); err != nil {
		return "", "", errors.New(h.scheme + " URL: the user name is not percent-encoded correctly")
	}
	if hasPass {
		if pass, err = url.PathUnescape(p); err != nil {
			return "", "", errors.New(h.scheme + " URL: the password is not percent-encoded correctly")
		}
	}
	if strings.ContainsAny(user, "\x00\r\n") || strings.ContainsAny(pass, "\x00\r\n") {
		return "", "", errors.New(h.scheme + " URL: the user name or password holds a control character")
	}
	return user, pass, nil
}

// parseHosts parses the comma-separated addresses.
func (h hostList) parseHosts(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("%s URL: no %s address (host:port[,host:port…])", h.scheme, h.noun)
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxHosts {
		return nil, fmt.Errorf("%s URL: more than %d %s addresses", h.scheme, maxHosts, h.noun)
	}
	addrs := make([]string, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		a, err := h.parseHost(p)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, fmt.Errorf("%s URL: %s %s is listed twice", h.scheme, h.noun, a)
		}
		seen[a] = true
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// parseHost checks one "host[:port]" (IPv6 in brackets) and returns it
// as host:port.
func (h hostList) parseHost(p string) (string, error) {
	host, port := p, h.port
	if hh, pt, err := net.SplitHostPort(p); err == nil {
		host, port = hh, pt
	} else if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
		host = p[1 : len(p)-1]
	} else if strings.Contains(p, ":") || strings.Contains(p, "[") {
		return "", fmt.Errorf("%s URL: %s address %q is not host:port", h.scheme, h.noun, p)
	}
	if host == "" || !validHostname(host) {
		return "", fmt.Errorf("%s URL: %s address %q has no valid host", h.scheme, h.noun, p)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Errorf("%s URL: %s address %q: the port must be 1..65535", h.scheme, h.noun, p)
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

// parseQuery decodes a query whose parameters may each appear once.
func parseQuery(scheme, query string) (map[string]string, error) {
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, errors.New(scheme + " URL: the query is not percent-encoded correctly")
	}
	out := make(map[string]string, len(q))
	for k, v := range q {
		if len(v) != 1 {
			return nil, fmt.Errorf("%s URL: query parameter %q is given %d times", scheme, k, len(v))
		}
		out[k] = v[0]
	}
	return out, nil
}

// parseWait applies wait_replicas or wait_timeout; false for another key.
func parseWait(scheme, k, v string, spec *Spec) (bool, error) {
	switch k {
	case "wait_replicas":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxWaitReplicas {
			return true, fmt.Errorf("%s URL: wait_replicas must be 0..%d", scheme, MaxWaitReplicas)
		}
		spec.WaitReplicas = n
	case "wait_timeout":
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > maxWaitTimeout {
			return true, fmt.Errorf("%s URL: wait_timeout must be a duration from 1ms to %v", scheme, maxWaitTimeout)
		}
		spec.WaitTimeout = d
	default:
		return false, nil
	}
	return true, nil
}

// parseSentinelQuery applies the query parameters of a Sentinel URL.
func parseSentinelQuery(query string, o *redis.FailoverOptions, spec *Spec) error {
	q, err := parseQuery(SentinelScheme, query)
	if err != nil {
		return err
	}
	for k, v := range q {
		if done, err := parseWait(SentinelScheme, k, v, spec); done {
			if err != nil {
				return err
			}
			continue
		}
		switch k {
		case "db":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > DefaultMaxDB {
				return fmt.Errorf("%s URL: db must be 0..%d", SentinelScheme, DefaultMaxDB)
			}
			o.DB = n
		case "sentinel_password":
			o.SentinelPassword = v
		case "sentinel_username":
			o.SentinelUsername = v
		default:
			return fmt.Errorf("%s URL: unknown query parameter %q (db, sentinel_password, sentinel_username, wait_replicas, wait_timeout)", SentinelScheme, k)
		}
	}
	if o.SentinelUsername != "" && o.SentinelPassword == "" {
		return errors.New(SentinelScheme + " URL: sentinel_username needs sentinel_password")
	}
	return nil
}

// parseClusterQuery applies the query parameters of a Cluster URL.
func parseClusterQuery(query string, spec *Spec) error {
	q, err := parseQuery(ClusterScheme, query)
	if err != nil {
		return err
	}
	for k, v := range q {
		done, err := parseWait(ClusterScheme, k, v, spec)
		switch {
		case err != nil:
			return err
		case done:
		case k == "db":
			return errors.New(ClusterScheme + " URL: a Redis Cluster has only database 0 (no db parameter)")
		default:
			return fmt.Errorf("%s URL: unknown query parameter %q (wait_replicas, wait_timeout)", ClusterScheme, k)
		}
	}
	return nil
}
