package redisconn

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseSentinel(t *testing.T) {
	tests := []struct {
		url                  string
		addrs                []string
		master, user, pass   string
		db                   int
		sentUser, sentPasswd string
	}{
		{url: "redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/mymaster",
			addrs: []string{"10.0.0.1:26379", "10.0.0.2:26380"}, master: "mymaster"},
		{url: "redis+sentinel://:s3cret@s1:1,s2/cache?db=3&sentinel_password=sp",
			addrs: []string{"s1:1", "s2:26379"}, master: "cache", pass: "s3cret", db: 3, sentPasswd: "sp"},
		{url: "redis+sentinel://app:p%40ss%3Aw@[::1]:26379,[fe80::1]/m%2Dx?sentinel_username=u&sentinel_password=v",
			addrs: []string{"[::1]:26379", "[fe80::1]:26379"}, master: "m-x", user: "app", pass: "p@ss:w",
			sentUser: "u", sentPasswd: "v"},
		{url: "REDIS+SENTINEL://h.example.com/m", addrs: []string{"h.example.com:26379"}, master: "m"},
		{url: "redis+sentinel://:a@b@h:2/m", addrs: []string{"h:2"}, master: "m", pass: "a@b"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			s, err := Parse(tc.url)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !s.Sentinel() || s.Single != nil {
				t.Fatalf("not a Sentinel spec: %+v", s)
			}
			f := s.Failover
			if !reflect.DeepEqual(f.SentinelAddrs, tc.addrs) {
				t.Errorf("addrs %q, want %q", f.SentinelAddrs, tc.addrs)
			}
			got := []any{f.MasterName, f.Username, f.Password, f.DB, f.SentinelUsername, f.SentinelPassword}
			want := []any{tc.master, tc.user, tc.pass, tc.db, tc.sentUser, tc.sentPasswd}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestParseCluster(t *testing.T) {
	tests := []struct {
		url        string
		addrs      []string
		user, pass string
		wait       int
		timeout    time.Duration
	}{
		{url: "redis+cluster://10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002",
			addrs: []string{"10.0.0.1:7000", "10.0.0.2:7001", "10.0.0.3:7002"}, timeout: DefaultWaitTimeout},
		{url: "redis+cluster://:s3cret@n1,n2:7000/",
			addrs: []string{"n1:6379", "n2:7000"}, pass: "s3cret", timeout: DefaultWaitTimeout},
		{url: "REDIS+CLUSTER://app:p%40ss%3Aw%2F%3F@[::1]:7000?wait_replicas=1",
			addrs: []string{"[::1]:7000"}, user: "app", pass: "p@ss:w/?", wait: 1, timeout: DefaultWaitTimeout},
		{url: "redis+cluster://:a@b@h:2/?wait_replicas=2&wait_timeout=250ms",
			addrs: []string{"h:2"}, pass: "a@b", wait: 2, timeout: 250 * time.Millisecond},
		{url: "redis+cluster://h.example.com", addrs: []string{"h.example.com:6379"}, timeout: DefaultWaitTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			s, err := Parse(tc.url)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !s.Clustered() || s.Sentinel() || s.Single != nil {
				t.Fatalf("not a Cluster spec: %+v", s)
			}
			c := s.Cluster
			got := []any{c.Addrs, c.Username, c.Password, s.WaitReplicas, s.WaitTimeout}
			want := []any{tc.addrs, tc.user, tc.pass, tc.wait, tc.timeout}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestParseWait(t *testing.T) {
	for _, tc := range []struct {
		url     string
		n       int
		timeout time.Duration
	}{
		{"redis+sentinel://h:1/m", 0, DefaultWaitTimeout},
		{"redis+sentinel://h:1/m?wait_replicas=1", 1, DefaultWaitTimeout},
		{"redis+sentinel://h:1/m?wait_replicas=2&wait_timeout=250ms", 2, 250 * time.Millisecond},
		{"redis://h:1", 0, 0},
	} {
		s, err := Parse(tc.url)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.url, err)
		}
		if s.WaitReplicas != tc.n || s.WaitTimeout != tc.timeout {
			t.Errorf("Parse(%q): wait %d %v, want %d %v", tc.url, s.WaitReplicas, s.WaitTimeout, tc.n, tc.timeout)
		}
	}
}

func TestParseSingle(t *testing.T) {
	tests := []struct {
		url, network, addr, pass string
		db                       int
	}{
		{"redis://:pw@127.0.0.1:6380/2", "tcp", "127.0.0.1:6380", "pw", 2},
		{"127.0.0.1:7000", "tcp", "127.0.0.1:7000", "", 0},
		{"rediss://h:6379", "tcp", "h:6379", "", 0},
		{"unix:///run/redis.sock?db=1", "unix", "/run/redis.sock", "", 1},
	}
	for _, tc := range tests {
		s, err := Parse(tc.url)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.url, err)
		}
		if s.Sentinel() || s.Single == nil {
			t.Fatalf("Parse(%q): not a single spec", tc.url)
		}
		o := s.Single
		if o.Network != tc.network || o.Addr != tc.addr || o.Password != tc.pass || o.DB != tc.db {
			t.Errorf("Parse(%q) = %s %s %q %d", tc.url, o.Network, o.Addr, o.Password, o.DB)
		}
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ url, want string }{
		{"", "no Redis URL"},
		{"redis+sentinel://h:1", "master name is missing"},
		{"redis+sentinel://h:1/", "master name is missing"},
		{"redis+sentinel://h:1?db=1", "master name is missing"},
		{"redis+sentinel:///m", "no Sentinel address"},
		{"redis+sentinel://:pw@/m", "no Sentinel address"},
		{"redis+sentinel://h:1,,h:2/m", "no valid host"},
		{"redis+sentinel://h:0/m", "port must be 1..65535"},
		{"redis+sentinel://h:65536/m", "port must be 1..65535"},
		{"redis+sentinel://h:01/m", "port must be 1..65535"},
		{"redis+sentinel://h:x/m", "port must be 1..65535"},
		{"redis+sentinel://h:1:2/m", "not host:port"},
		{"redis+sentinel://h%zz:1/m", "no valid host"},
		{"redis+sentinel://h:1,h:1/m", "listed twice"},
		{"redis+sentinel://h:1/a/b", "one master name"},
		{"redis+sentinel://h:1/a%2Fb", "one master name"},
		{"redis+sentinel://h:1/a%zz", "one master name"},
		{"redis+sentinel://h:1/a%20", "space or control"},
		{"redis+sentinel://h:1/m?db=16", "db must be 0..15"},
		{"redis+sentinel://h:1/m?db=-1", "db must be 0..15"},
		{"redis+sentinel://h:1/m?db=1&db=2", "given 2 times"},
		{"redis+sentinel://h:1/m?password=x", "unknown query parameter"},
		{"redis+sentinel://h:1/m?sentinel_username=u", "needs sentinel_password"},
		{"redis+sentinel://h:1/m?wait_replicas=17", "wait_replicas must be 0..16"},
		{"redis+sentinel://h:1/m?wait_replicas=x", "wait_replicas must be 0..16"},
		{"redis+sentinel://h:1/m?wait_timeout=0s", "wait_timeout must be"},
		{"redis+sentinel://h:1/m?wait_timeout=11s", "wait_timeout must be"},
		{"redis+sentinel://h:1/m?wait_timeout=5", "wait_timeout must be"},
		{"redis+sentinel://h:1/m?db=%zz", "percent-encoded"},
		{"redis+sentinel://:p%zz@h:1/m", "password is not percent-encoded"},
		{"redis+sentinel://u%zz:p@h:1/m", "user name is not percent-encoded"},
		{"redis+sentinel://:p%0A@h:1/m", "control character"},
		{"redis+cluster://", "no node address"},
		{"redis+cluster://:pw@", "no node address"},
		{"redis+cluster://:pw@?wait_replicas=1", "no node address"},
		{"redis+cluster://h:1,,h:2", "no valid host"},
		{"redis+cluster://h:0", "port must be 1..65535"},
		{"redis+cluster://h:1:2", "not host:port"},
		{"redis+cluster://h:1,h:1", "listed twice"},
		{"redis+cluster://h,h:6379", "listed twice"},
		{"redis+cluster://h:1/0", "no path or fragment"},
		{"redis+cluster://h:1/m", "no path or fragment"},
		{"redis+cluster://h:1#x", "no path or fragment"},
		{"redis+cluster://h:1?wait_replicas=1#x", "no path or fragment"},
		{"redis+cluster://h:1?db=0", "only database 0"},
		{"redis+cluster://h:1?read_only=1", "unknown query parameter"},
		{"redis+cluster://h:1?wait_replicas=17", "wait_replicas must be 0..16"},
		{"redis+cluster://h:1?wait_replicas=1&wait_replicas=1", "given 2 times"},
		{"redis+cluster://h:1?wait_timeout=20s", "wait_timeout must be"},
		{"redis+cluster://h:1?wait_timeout=%zz", "percent-encoded"},
		{"redis+cluster://:p%zz@h:1", "password is not percent-encoded"},
		{"redis+cluster://:p%00@h:1", "control character"},
		{"redis+cluster://:pa/ss@h:1", "an '@' after the host list"},
		{"redis+sentinel://:pa/ss@h:1/m", "an '@' after the host list"},
		{"http://h:1/m", "not a redis://"},
		{"redis://h:1/x", "not a redis://"},
		{"redis://", "not a redis://"},
		{"rediss://:pw@/2", "not a redis://"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
}

// TestErrorsHidePassword: no error repeats the password it was given.
func TestErrorsHidePassword(t *testing.T) {
	const pw = "Zq9-hunter2-pass"
	for _, u := range []string{
		"redis+sentinel://:" + pw + "@h:99999/m",
		"redis+sentinel://:" + pw + "@h:1/m?bad=1",
		"redis://:" + pw + "@h:1/x",
		"redis://:" + pw + "@h:1/0?bogus=1",
		"redis+cluster://:" + pw + "@h:99999",
		"redis+cluster://:" + pw + "@h:1?bad=1",
		"redis+cluster://:" + pw + "@h:1/0",
		// A raw '/', '?' or '#' in the password ends the authority early.
		"redis+cluster://:Zq9-hu/nter2-pass@h:1",
		"redis+cluster://:Zq9-hu?nter2-pass@h:1",
		"redis+cluster://:Zq9-hu#nter2-pass@h:1",
		"redis+sentinel://:Zq9-hu/nter2-pass@h:1/m",
	} {
		_, err := Parse(u)
		if err == nil {
			t.Fatalf("Parse(%q) succeeded", u)
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "nter2") || strings.Contains(err.Error(), "Zq9") {
			t.Errorf("Parse(%q): error repeats the password: %v", u, err)
		}
	}
}

func TestNewClientAndDescribe(t *testing.T) {
	for _, tc := range []struct{ url, describe string }{
		{"redis+sentinel://:pw@a:1,b:2/mm?db=4", `sentinel master "mm" via a:1,b:2 db 4 wait 0 replicas`},
		{"redis://:pw@h:5/3", "tcp h:5 db 3"},
		{"redis+cluster://:pw@a:1,b:2?wait_replicas=1", "cluster via a:1,b:2 wait 1 replicas"},
	} {
		s, err := Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Describe(); got != tc.describe {
			t.Errorf("Describe(%q) = %q, want %q", tc.url, got, tc.describe)
		}
		c := s.NewClient()
		if c == nil {
			t.Fatalf("NewClient(%q) = nil", tc.url)
		}
		if _, isCluster := c.(*redis.ClusterClient); isCluster != s.Clustered() {
			t.Errorf("NewClient(%q) = %T", tc.url, c)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if c := (Spec{}).NewClient(); c != nil {
		t.Errorf("zero Spec made a client")
	}
}

// FuzzParse: Parse never panics; a Sentinel spec it accepts has a master
// name and valid host:port addresses; no error repeats a password given in
// the userinfo.
func FuzzParse(f *testing.F) {
	f.Add("pw-long-enough", "h:1,h2:2", "mymaster", "db=1")
	f.Add("", "[::1]:26379", "m", "sentinel_password=x")
	f.Add("a:b", "h", "m%20", "db=99")
	f.Add("secretsecret", "h:0", "", "")
	f.Fuzz(func(t *testing.T, pw, hosts, master, query string) {
		raw := "redis+sentinel://:" + url.PathEscape(pw) + "@" + hosts + "/" + master
		if query != "" {
			raw += "?" + query
		}
		s, err := Parse(raw)
		if err != nil {
			if len(pw) >= 8 && !strings.Contains(hosts+master+query, pw) && strings.Contains(err.Error(), pw) {
				t.Fatalf("error repeats the password: %v", err)
			}
			return
		}
		f := s.Failover
		if f == nil || f.MasterName == "" || len(f.SentinelAddrs) == 0 {
			t.Fatalf("accepted %q as %+v", raw, s)
		}
		for _, a := range f.SentinelAddrs {
			if _, err := sentinelHosts.parseHost(a); err != nil {
				t.Fatalf("accepted address %q does not parse again: %v", a, err)
			}
		}
		if f.DB < 0 || f.DB > DefaultMaxDB {
			t.Fatalf("db %d", f.DB)
		}
		_, _ = Parse(hosts)
	})
}

// FuzzParseCluster: Parse never panics on a Cluster URL; a spec it accepts
// has 1..maxHosts distinct addresses that parse again and WAIT settings in
// their bounds; no error repeats a password given in the userinfo.
func FuzzParseCluster(f *testing.F) {
	f.Add("pw-long-enough", "h:1,h2:2", "", "wait_replicas=1")
	f.Add("", "[::1]:7000", "/", "wait_timeout=1s")
	f.Add("a:b", "h", "/0", "db=0")
	f.Add("secretsecret", "h:0", "#x", "")
	f.Fuzz(func(t *testing.T, pw, hosts, path, query string) {
		raw := "redis+cluster://:" + url.PathEscape(pw) + "@" + hosts + path
		if query != "" {
			raw += "?" + query
		}
		s, err := Parse(raw)
		if err != nil {
			if len(pw) >= 8 && !strings.Contains(hosts+path+query, pw) && strings.Contains(err.Error(), pw) {
				t.Fatalf("error repeats the password: %v", err)
			}
			return
		}
		c := s.Cluster
		if c == nil || len(c.Addrs) == 0 || len(c.Addrs) > maxHosts || s.Failover != nil || s.Single != nil {
			t.Fatalf("accepted %q as %+v", raw, s)
		}
		seen := map[string]bool{}
		for _, a := range c.Addrs {
			if again, err := clusterHosts.parseHost(a); err != nil || again != a || seen[a] {
				t.Fatalf("accepted address %q: parses again as %q (%v), repeated %v", a, again, err, seen[a])
			}
			seen[a] = true
		}
		if s.WaitReplicas < 0 || s.WaitReplicas > MaxWaitReplicas || s.WaitTimeout < time.Millisecond || s.WaitTimeout > maxWaitTimeout {
			t.Fatalf("wait %d %v", s.WaitReplicas, s.WaitTimeout)
		}
	})
}
