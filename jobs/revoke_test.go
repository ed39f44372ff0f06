package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRevokeKey: a revoked key no longer authenticates (a restart's
// provisioning does not bring it back), keeps its credits, cannot be
// revoked twice; other keys are untouched; unknown and ambiguous ids are
// clear errors.
func TestRevokeKey(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		other, err := e.svc.CreateKey(ctx, "other", 5)
		if err != nil {
			t.Fatal(err)
		}
		id := e.owner[:12]
		got, err := e.svc.RevokeKey(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != id || got.RevokedAt == nil || got.Credits != e.credits || got.Label != "test" {
			t.Errorf("RevokeKey = %+v, want id %s revoked with %d credits", got, id, e.credits)
		}
		if _, err := e.svc.Authenticate(ctx, e.key); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("revoked key authenticates: %v", err)
		}
		if owner, err := e.svc.Authenticate(ctx, other); err != nil || owner != OwnerOf(other) {
			t.Errorf("other key: %q, %v", owner, err)
		}
		if created, err := e.svc.ProvisionKey(ctx, e.key, 1000); err != nil || created {
			t.Errorf("provisioning the revoked key again: created %v, %v", created, err)
		}
		if _, err := e.svc.Authenticate(ctx, e.key); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("revoked key authenticates after provisioning: %v", err)
		}
		if b := e.balance(); b != e.credits {
			t.Errorf("balance %d, want the %d credits kept", b, e.credits)
		}
		_, err = e.svc.RevokeKey(ctx, id)
		if !errors.Is(err, ErrKeyRevoked) || !strings.Contains(err.Error(), id) {
			t.Errorf("second revoke: %v, want ErrKeyRevoked naming %s", err, id)
		}
		keys, err := e.svc.ListKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		revoked := map[string]bool{}
		for _, k := range keys {
			revoked[k.ID] = k.RevokedAt != nil
		}
		if !revoked[id] || revoked[OwnerOf(other)[:12]] || len(revoked) != 2 {
			t.Errorf("ListKeys revoked flags %v", revoked)
		}
		for _, tc := range []struct{ id, want string }{
			{"00000000", "no key with id"},
			{"abc", "at least 8 hex digits"},
		} {
			if _, err := e.svc.RevokeKey(ctx, tc.id); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RevokeKey(%q) = %v, want %q", tc.id, err, tc.want)
			}
		}
	})
}
