package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
	"fashiond/spec"
)

// Catalogue lists the spec's models in spec order with their lifecycle.
var Catalogue = catalogue()

func catalogue() []ModelInfo {
	out := make([]ModelInfo, len(spec.Table))
	for i, m := range spec.Table {
		out[i] = ModelInfo{Name: m.Name, Lifecycle: m.Lifecycle}
	}
	return out
}

// SuccessStatus is the terminal success value of a model: "success" for
// prompt-tryon, "succeeded" for every other model.
func SuccessStatus(model string) string { return spec.SuccessStatus(model) }

// Priority is a model queue's weight within a worker's image server (asynq
// weighted priority: a queue with weight 6 is polled about three times as
// often as one with weight 2). Video runs in its own server so it never
// holds the image slots.
func Priority(model string) int {
	switch model {
	case spec.ModelImageToVideo:
		return 2
	case spec.ModelTryOn, spec.ModelPromptTryOn, spec.ModelProductToModel:
		return 6
	default:
		return 5
	}
}

// isVideo tells which worker server consumes a model's queue.
func isVideo(model string) bool { return model == spec.ModelImageToVideo }

// liveWorkers counts workers whose last heartbeat for model is recent.
func (s *Service) liveWorkers(ctx context.Context, model string) (int, error) {
	min := strconv.FormatInt(nowMS()-HeartbeatTTL.Milliseconds(), 10)
	n, err := s.rdb.ZCount(ctx, rdb.KeyServed(model), min, "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("jobs: worker heartbeats: %w", err)
	}
	return int(n), nil
}

// Models lists the spec's models, then any other model a worker has
// advertised, each with the number of live workers serving it.
func (s *Service) Models(ctx context.Context) ([]ModelInfo, error) {
	known, err := s.rdb.SMembers(ctx, rdb.KeyModels).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: models: %w", err)
	}
	out := append([]ModelInfo(nil), Catalogue...)
	seen := map[string]bool{}
	for _, m := range Catalogue {
		seen[m.Name] = true
	}
	sort.Strings(known)
	for _, name := range known {
		if !seen[name] {
			out = append(out, ModelInfo{Name: name, Lifecycle: spec.LifecycleExperimental})
			seen[name] = true
		}
	}
	min := strconv.FormatInt(nowMS()-HeartbeatTTL.Milliseconds(), 10)
	pipe := s.rdb.Pipeline()
	counts := make([]interface{ Val() int64 }, len(out))
	for i, m := range out {
		counts[i] = pipe.ZCount(ctx, rdb.KeyServed(m.Name), min, "+inf")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("jobs: models: %w", err)
	}
	for i := range out {
		out[i].Workers = int(counts[i].Val())
		out[i].Served = out[i].Workers > 0
	}
	if err := s.addGenerative(ctx, out, min); err != nil {
		return nil, err
	}
	return out, nil
}

// addGenerative fills each model's stages and devices from the live
// workers' info.
func (s *Service) addGenerative(ctx context.Context, out []ModelInfo, min string) error {
	ids, err := s.rdb.ZRangeByScore(ctx, rdb.KeyWorkers, &redis.ZRangeBy{Min: min, Max: "+inf"}).Result()
	if err != nil {
		return fmt.Errorf("jobs: models: %w", err)
	}
	gen, devs := map[string][]string{}, map[string][]string{}
	for _, id := range ids {
		raw, err := s.rdb.Get(ctx, rdb.KeyWorker(id)).Bytes()
		if err != nil {
			continue // the worker's info expired or it never advertised
		}
		var wi workerInfo
		if json.Unmarshal(raw, &wi) != nil {
			continue
		}
		for _, m := range wi.Models {
			if wi.Device != "" && !slices.Contains(devs[m], wi.Device) {
				devs[m] = append(devs[m], wi.Device)
			}
		}
		for m, names := range wi.Generative {
			for _, n := range names {
				if !slices.Contains(gen[m], n) {
					gen[m] = append(gen[m], n)
				}
			}
		}
	}
	for i := range out {
		out[i].Devices = append([]string{}, devs[out[i].Name]...)
		sort.Strings(out[i].Devices)
		out[i].Stages, out[i].GenerativeModels = "reference", []string{}
		if g := gen[out[i].Name]; len(g) > 0 {
			sort.Strings(g)
			out[i].Stages, out[i].GenerativeModels = "generative", g
		}
	}
	return nil
}
