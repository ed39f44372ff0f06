package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"fashiond/jobs"
	"fashiond/redisserver"
)

// TestKeysRevoke: `keys create` prints the key and its ID; after `keys
// revoke ID` the running API answers 401 with the error body to that key
// and `keys list` shows it revoked with its credits; revoking it again, an
// unknown ID and a missing ID are errors that say so.
func TestKeysRevoke(t *testing.T) {
	if !redisserver.Available("") {
		t.Fatal("redis-server is not installed (make setup installs it)")
	}
	rs, err := redisserver.Start(context.Background(), redisserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	bin := buildBinary(t)
	env := append(os.Environ(), "FASHIOND_DATA_DIR="+t.TempDir(), "FASHIOND_REDIS_URL="+rs.URL(), "FASHIOND_LOG_LEVEL=warn")
	run := func(args ...string) (stdout, stderr string, err error) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		return out.String(), errb.String(), err
	}
	key, msg, err := run("keys", "create", "-label", "rev", "-credits", "7")
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, msg)
	}
	key = strings.TrimSpace(key)
	id := jobs.OwnerOf(key)[:12]
	if !strings.HasPrefix(key, jobs.KeyPrefix) || !strings.Contains(msg, "New API key "+id) {
		t.Fatalf("keys create printed %q and %q, want the key and its ID %s", key, msg, id)
	}
	addr := freeAddr(t)
	s := &server{t: t, bin: bin, base: "http://" + addr, args: []string{"api"}, env: append(env, "FASHIOND_ADDR="+addr)}
	s.start()
	defer s.stop()
	if code, _ := s.do("GET", "/v1/credits", key, nil, nil); code != 200 {
		t.Fatalf("credits with the new key: %d", code)
	}
	out, msg, err := run("keys", "revoke", id)
	if err != nil || out != "key "+id+" (rev) revoked; its 7 credits are kept but cannot be used\n" {
		t.Fatalf("keys revoke: %v %q %q", err, out, msg)
	}
	var body struct{ Error, Code, Message string }
	if code, _ := s.do("GET", "/v1/credits", key, nil, &body); code != 401 || body.Code != "unauthorized" || body.Error != "the API key is not valid" {
		t.Errorf("credits with the revoked key: %d %+v, want 401 unauthorized", code, body)
	}
	if code, _ := s.do("POST", "/v1/run", key, map[string]any{"model_name": "tryon", "inputs": map[string]any{}}, nil); code != 401 {
		t.Errorf("run with the revoked key: %d, want 401", code)
	}
	out, _, _ = run("keys", "list")
	if !strings.Contains(out, "REVOKED") || !strings.Contains(out, id+"  rev    7") || strings.Contains(out, id+"  rev    7        -") {
		t.Errorf("keys list does not show %s revoked with its 7 credits:\n%s", id, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "revoke", id}, "already revoked"},
		{[]string{"keys", "revoke", "ffffffff"}, "no key with id ffffffff"},
		{[]string{"keys", "revoke"}, "want the key ID"},
	} {
		_, msg, err := run(tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %v %q, want exit 1 saying %q", tc.args, err, msg, tc.want)
		}
	}
}
