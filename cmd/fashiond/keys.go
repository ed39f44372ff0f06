package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"fashiond/jobs"
)

// keysSummary is the usage text of `fashiond keys`.
const keysSummary = "Manages API keys in Redis (FASHIOND_REDIS_URL, else the private redis-server of DATA_DIR).\n\n" +
	"  fashiond keys create [-label L] [-credits N]   creates a key and prints it once\n" +
	"  fashiond keys list                             lists keys (id, label, credits)\n" +
	"  fashiond keys add-credits ID N                 adds N credits to key ID (from list)\n" +
	"  fashiond keys revoke ID                        revokes key ID for good: the API answers 401 to it;\n" +
	"                                                 its credits, jobs and saved models are kept, unusable\n" +
	"  fashiond keys webhook-secret -key ID [-rotate] [-overlap 24h]\n" +
	"                                                 prints the key's own webhook signing secret (whsec_...);\n" +
	"                                                 -rotate replaces it, both signatures are sent during -overlap\n" +
	"  fashiond keys webhook-secret -operator         prints the operator secret (signs every key's webhooks too:\n" +
	"                                                 never give it to a tenant)\n" +
	"  fashiond keys limits ID [-limit-rate R] [-limit-burst B] [-limit-max-in-flight N] [-limit-dispatch D]\n" +
	"                                                 sets the key's own limits (0: unchanged, -1: back to the\n" +
	"                                                 service default) and prints the overrides in force"

// keysFlags are the flags of `fashiond keys` (each action reads its own).
type keysFlags struct {
	label, keyID     string
	credits          int64
	rotate, operator bool
	overlap          time.Duration
	lim              jobs.KeyLimits
}

// register adds the flags to fs.
func (f *keysFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.label, "label", "", "label of a new key")
	fs.Int64Var(&f.credits, "credits", 100, "credits of a new key")
	fs.StringVar(&f.keyID, "key", "", "key ID (from keys list) for webhook-secret")
	fs.BoolVar(&f.rotate, "rotate", false, "webhook-secret: replace the key's secret")
	fs.DurationVar(&f.overlap, "overlap", jobs.DefaultSecretOverlap, "webhook-secret -rotate: how long the old secret still signs")
	fs.BoolVar(&f.operator, "operator", false, "webhook-secret: print the operator secret instead of a key's")
	fs.Float64Var(&f.lim.Rate, "limit-rate", 0, "limits: requests per second (0 unchanged, -1 default)")
	fs.IntVar(&f.lim.Burst, "limit-burst", 0, "limits: request burst (0 unchanged, -1 default)")
	fs.IntVar(&f.lim.MaxInFlight, "limit-max-in-flight", 0, "limits: unfinished jobs (0 unchanged, -1 default)")
	fs.IntVar(&f.lim.Dispatch, "limit-dispatch", 0, "limits: jobs of one model in its queue at once (0 unchanged, -1 default)")
}

// cmdKeys implements `fashiond keys`.
func cmdKeys(args []string) error {
	var f keysFlags
	cfg, fs, err := parseConfig("keys", keysSummary, args, f.register)
	if err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("keys: missing action (create, list, add-credits, revoke, webhook-secret or limits)")
	}
	// Flags may also follow the action: `keys create -credits 50`.
	if err := fs.Parse(rest[1:]); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	action, rest := rest[0], fs.Args()
	log := newLogger(*cfg)
	ctx := context.Background()
	// A private redis-server started for this command is stopped when it
	// returns: with serve stopped, nothing is left running.
	var cl stack
	defer cl.Close()
	svc, _, _, err := openService(ctx, *cfg, log, true, &cl, &cl)
	if err != nil {
		return err
	}
	return keysAction(ctx, svc, fs, action, rest, &f)
}

// keysAction runs one keys action with its arguments rest; f is bound to
// fs, which limits parses again (flags after the ID).
func keysAction(ctx context.Context, svc *jobs.Service, fs *flag.FlagSet, action string, rest []string, f *keysFlags) error {
	switch action {
	case "create":
		return createKey(ctx, svc, f.label, f.credits)
	case "list":
		return listKeys(ctx, svc)
	case "revoke":
		return revokeKey(ctx, svc, rest)
	case "add-credits":
		return addCredits(ctx, svc, rest)
	case "webhook-secret":
		return webhookSecret(ctx, svc, f.keyID, f.rotate, f.operator, f.overlap)
	case "limits":
		// The ID may come before the limits: `keys limits ID -limit-rate 2`.
		rest, err := parseInterleaved(fs, rest)
		if err != nil {
			return err
		}
		return setKeyLimits(ctx, svc, rest, f.lim)
	}
	return fmt.Errorf("keys: unknown action %q (create, list, add-credits, revoke, webhook-secret or limits)", action)
}

// createKey creates a key and prints it (once: only its hash is stored).
func createKey(ctx context.Context, svc *jobs.Service, label string, credits int64) error {
	k, err := svc.CreateKey(ctx, label, credits)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "New API key %s (the ID for keys add-credits/limits/webhook-secret); the key is shown once, store it now:\n", jobs.OwnerOf(k)[:12])
	fmt.Println(k)
	return nil
}

// listKeys prints the keys as a table.
func listKeys(ctx context.Context, svc *jobs.Service) error {
	ks, err := svc.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLABEL\tCREDITS\tCREATED\tREVOKED")
	for _, k := range ks {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.UTC().Format(keyTimeLayout)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", k.ID, k.Label, k.Credits, k.CreatedAt.UTC().Format(keyTimeLayout), revoked)
	}
	return tw.Flush()
}

// addCredits adds args[1] credits to the key whose ID is args[0].
func addCredits(ctx context.Context, svc *jobs.Service, args []string) error {
	if len(args) != 2 {
		return errors.New("keys add-credits: want ID and N")
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return fmt.Errorf("keys add-credits: N must be an integer: %w", err)
	}
	bal, err := svc.AddCredits(ctx, args[0], n)
	if err != nil {
		return err
	}
	fmt.Printf("key %s: balance %d\n", args[0], bal)
	return nil
}

// setKeyLimits sets the limits of the key whose ID is args[0] and prints
// the overrides in force.
func setKeyLimits(ctx context.Context, svc *jobs.Service, args []string, lim jobs.KeyLimits) error {
	if len(args) != 1 {
		return errors.New("keys limits: want the key ID (from keys list)")
	}
	got, err := svc.SetKeyLimits(ctx, args[0], lim)
	if err != nil {
		return err
	}
	fmt.Printf("key %s: rate %g/s, burst %d, max in flight %d, dispatch %d (0 = the service default)\n", args[0], got.Rate, got.Burst, got.MaxInFlight, got.Dispatch)
	return nil
}

// keyTimeLayout is how keys list shows times.
const keyTimeLayout = "2006-01-02 15:04:05Z"

// revokeKey revokes the key whose ID is args[0].
func revokeKey(ctx context.Context, svc *jobs.Service, args []string) error {
	if len(args) != 1 {
		return errors.New("keys revoke: want the key ID (from keys list)")
	}
	k, err := svc.RevokeKey(ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Printf("key %s (%s) revoked; its %d credits are kept but cannot be used\n", k.ID, k.Label, k.Credits)
	return nil
}

// webhookSecret prints a key's webhook signing secret (rotating it when
// asked) or, with operator, the operator secret.
func webhookSecret(ctx context.Context, svc *jobs.Service, keyID string, rotate, operator bool, overlap time.Duration) error {
	switch {
	case operator && (keyID != "" || rotate):
		return errors.New("keys webhook-secret: -operator takes no -key or -rotate")
	case operator:
		fmt.Fprintln(os.Stderr, "The operator secret signs every key's webhooks: never give it to a tenant (give each tenant its key's secret: -key ID).")
		fmt.Println(svc.WebhookSecret())
		return nil
	case keyID == "":
		return errors.New("keys webhook-secret: give -key ID (from keys list); each key has its own secret")
	}
	sec, err := svc.KeyWebhookSecret(ctx, keyID, rotate, overlap)
	if err != nil {
		return err
	}
	if rotate {
		fmt.Fprintf(os.Stderr, "New secret; the old one keeps signing (a second signature) for %s.\n", overlap)
	}
	fmt.Println(sec)
	return nil
}
