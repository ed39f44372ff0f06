package fetch

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr string
		rule string // "" = allowed
	}{
		// IPv4
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "link-local"},
		{"169.254.0.1", "link-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.128.0.1", ""},
		{"0.0.0.0", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"198.18.0.1", "benchmarking"},
		// IPv6
		{"2606:4700:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fc00::1", "private (unique local)"},
		{"fd12:3456::1", "private (unique local)"},
		{"ff02::1", "multicast"},
		{"2001:db8::1", "documentation"},
		// IPv6 forms of IPv4
		{"::ffff:127.0.0.1", "IPv4-mapped IPv6 form of loopback"},
		{"::ffff:169.254.169.254", "IPv4-mapped IPv6 form of link-local"},
		{"::ffff:10.1.2.3", "IPv4-mapped IPv6 form of private"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::7f00:1", "NAT64 form of loopback"},
		{"64:ff9b::808:808", ""},
		{"2002:a9fe:a9fe::1", "6to4 form of link-local"},
		{"2002:0808:0808::1", ""},
		{"::127.0.0.1", "IPv4-compatible"},
	}
	p := DefaultPolicy()
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := p.CheckAddr(netip.MustParseAddr(tt.addr))
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("want RefusedError, got %v", err)
			}
			if !strings.HasPrefix(re.Rule, tt.rule) {
				t.Fatalf("rule %q, want prefix %q", re.Rule, tt.rule)
			}
			if !strings.Contains(err.Error(), "address "+netip.MustParseAddr(tt.addr).WithZone("").String()+" ") {
				t.Fatalf("message %q does not name the address", err)
			}
		})
	}
}

func TestCheckAddrAllow(t *testing.T) {
	allow, err := ParseAllow(" 127.0.0.0/8, 10.1.2.3 ,fd00::/8,")
	if err != nil {
		t.Fatal(err)
	}
	if len(allow) != 3 {
		t.Fatalf("got %d prefixes", len(allow))
	}
	p := DefaultPolicy()
	p.Allow = allow
	for addr, ok := range map[string]bool{
		"127.0.0.1":        true,
		"::ffff:127.0.0.1": true,
		"10.1.2.3":         true,
		"10.1.2.4":         false,
		"fd00::5":          true,
		"fc00::5":          false,
		"::1":              false,
		"169.254.169.254":  false,
	} {
		err := p.CheckAddr(netip.MustParseAddr(addr))
		if (err == nil) != ok {
			t.Errorf("%s: allowed=%v, want %v (%v)", addr, err == nil, ok, err)
		}
	}
	for _, bad := range []string{"127.0.0.0/33", "localhost", "10.0.0.0/8/8"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q): want error", bad)
		}
	}
	if got, err := ParseAllow(""); err != nil || got != nil {
		t.Errorf("ParseAllow(\"\") = %v, %v", got, err)
	}
}

func TestCheckURLSyntax(t *testing.T) {
	tests := []struct {
		url  string
		want string // "" = ok; else substring of the error
	}{
		{"https://example.com/a.jpg", ""},
		{"http://example.com:8080/a.jpg?x=1#f", ""},
		{"HTTPS://EXAMPLE.COM/A.JPG", ""},
		{"http://[2001:db8::1]/x", ""},
		{"", "empty"},
		{"example.com/a.jpg", "not absolute"},
		{"/a.jpg", "not absolute"},
		{"ftp://example.com/a.jpg", `scheme "ftp"`},
		{"file:///etc/passwd", `scheme "file"`},
		{"javascript:alert(1)", `scheme "javascript"`},
		{"http://", "no host"},
		{"http:///path", "no host"},
		{"http:example.com", "no host"},
		{"http://example.com:0/", "out of range"},
		{"http://example.com:70000/", "out of range"},
		{" http://example.com/", "spaces"},
		{"http://exa mple.com/", "cannot be parsed"},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), "the limit is 8192"},
	}
	for _, tt := range tests {
		err := CheckURLSyntax(tt.url)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want it to contain %q", tt.url, err, tt.want)
		}
	}
}

func TestPolicyCheckURL(t *testing.T) {
	p := DefaultPolicy()
	for raw, ok := range map[string]bool{
		"http://169.254.169.254/latest/meta-data": false,
		"http://[::1]:8080/":                      false,
		"http://[::ffff:10.0.0.1]/":               false,
		"http://10.0.0.1/":                        false,
		"http://8.8.8.8/":                         true,
		"http://localhost/":                       false,
		"http://LOCALHOST./":                      false,
		"http://app.localhost:8080/":              false,
		"http://example.com/":                     true, // names are checked at connect time
	} {
		if err := p.CheckURL(raw); (err == nil) != ok {
			t.Errorf("%s: ok=%v want %v (%v)", raw, err == nil, ok, err)
		}
	}
}

func TestFormatMB(t *testing.T) {
	for n, want := range map[int64]string{
		25 << 20: "25 MB",
		32715571: "31.2 MB",
		1 << 19:  "0.5 MB",
		0:        "0 MB",
		26256343: "25 MB",
	} {
		if got := FormatMB(n); got != want {
			t.Errorf("FormatMB(%d) = %q, want %q", n, got, want)
		}
	}
}
