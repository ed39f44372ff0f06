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

func cmdKeys(args []string) error {
	const summary = "Manages API keys in Redis (FASHIOND_REDIS_URL, else the private redis-server of DATA_DIR).\n\n" +
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
	var label, keyID string
	var credits int64
	var rotate, operator bool
	var overlap time.Duration
	var lim jobs.KeyLimits
	cfg, fs, err := parseConfig("keys", summary, args, func(fs *flag.FlagSet) {
		fs.StringVar(&label, "label", "", "label of a new key")
		fs.Int64Var(&credits, "credits", 100, "credits of a new key")
		fs.StringVar(&keyID, "key", "", "key ID (from keys list) for webhook-secret")
		fs.BoolVar(&rotate, "rotate", false, "webhook-secret: replace the key's secret")
		fs.DurationVar(&overlap, "overlap", jobs.DefaultSecretOverlap, "webhook-secret -rotate: how long the old secret still signs")
		fs.BoolVar(&operator, "operator", false, "webhook-secret: print the operator secret instead of a key's")
		fs.Float64Var(&lim.Rate, "limit-rate", 0, "limits: requests per second (0 unchanged, -1 default)")
		fs.IntVar(&lim.Burst, "limit-burst", 0, "limits: request burst (0 unchanged, -1 default)")
		fs.IntVar(&lim.MaxInFlight, "limit-max-in-flight", 0, "limits: unfinished jobs (0 unchanged, -1 default)")
		fs.IntVar(&lim.Dispatch, "limit-dispatch", 0, "limits: jobs of one model in its queue at once (0 unchanged, -1 default)")
	})
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
	switch action {
	case "create":
		k, err := svc.CreateKey(ctx, label, credits)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "New API key %s (the ID for keys add-credits/limits/webhook-secret); the key is shown once, store it now:\n", jobs.OwnerOf(k)[:12])
		fmt.Println(k)
	case "list":
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
	case "revoke":
		return revokeKey(ctx, svc, rest)
	case "add-credits":
		if len(rest) != 2 {
			return errors.New("keys add-credits: want ID and N")
		}
		n, err := strconv.ParseInt(rest[1], 10, 64)
		if err != nil {
			return fmt.Errorf("keys add-credits: N must be an integer: %w", err)
		}
		bal, err := svc.AddCredits(ctx, rest[0], n)
		if err != nil {
			return err
		}
		fmt.Printf("key %s: balance %d\n", rest[0], bal)
	case "webhook-secret":
		return webhookSecret(ctx, svc, keyID, rotate, operator, overlap)
	case "limits":
		// The ID may come before the limits: `keys limits ID -limit-rate 2`.
		if rest, err = parseInterleaved(fs, rest); err != nil {
			return err
		}
		if len(rest) != 1 {
			return errors.New("keys limits: want the key ID (from keys list)")
		}
		got, err := svc.SetKeyLimits(ctx, rest[0], lim)
		if err != nil {
			return err
		}
		fmt.Printf("key %s: rate %g/s, burst %d, max in flight %d, dispatch %d (0 = the service default)\n", rest[0], got.Rate, got.Burst, got.MaxInFlight, got.Dispatch)
	default:
		return fmt.Errorf("keys: unknown action %q (create, list, add-credits, revoke, webhook-secret or limits)", action)
	}
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
