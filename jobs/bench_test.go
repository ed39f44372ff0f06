package jobs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/internal/pipelinetest"
	"fashiond/jobs/internal/rdb"
	"fashiond/jobs/redistest"
	"fashiond/pipelines"
	"fashiond/spec"
	"fashiond/storage"
)

// benchService opens a service on a fresh redis-server with a key holding
// plenty of credits.
func benchService(b *testing.B) (*Service, string) {
	b.Helper()
	st, err := storage.NewLocal(b.TempDir(), "http://127.0.0.1/cdn")
	if err != nil {
		b.Fatal(err)
	}
	svc, err := Open(context.Background(), Options{RedisURL: redistest.Start(b), Store: st, JanitorInterval: -1, Log: testLog()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	key, err := svc.CreateKey(context.Background(), "bench", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	return svc, OwnerOf(key)
}

func reportPercentiles(b *testing.B, d []time.Duration, unit string) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) float64 {
		i := int(p * float64(len(d)-1))
		return float64(d[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-"+unit)
	b.ReportMetric(pct(0.99), "p99-"+unit)
}

// BenchmarkSubmit measures Submit (heartbeat check, Lua reserve + record,
// asynq enqueue) against a local redis-server, with no worker consuming.
func BenchmarkSubmit(b *testing.B) {
	svc, owner := benchService(b)
	ctx := context.Background()
	advertise := func() {
		svc.rdb.ZAdd(ctx, rdb.KeyServed(spec.ModelTryOn), redis.Z{Score: float64(nowMS()), Member: "bench"})
	}
	advertise()
	lat := make([]time.Duration, 0, b.N)
	req := SubmitRequest{Owner: owner, Model: spec.ModelTryOn, Cost: 1, Inputs: &spec.TryOnInputs{PersonImage: "https://example.com/p.jpg", GarmentImage: "https://example.com/g.jpg", Accuracy: "standard", SampleCount: 1}}
	b.ResetTimer()
	last := time.Now()
	for i := 0; i < b.N; i++ {
		if time.Since(last) > time.Second {
			advertise()
			last = time.Now()
		}
		t0 := time.Now()
		if _, err := svc.Submit(ctx, req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat, "ms")
}

// BenchmarkPickup measures enqueue-to-start latency: from Submit returning
// to a no-op pipeline starting on an idle worker, for poll intervals of
// 50 ms (the default) and 100 ms. "next" submits right after the previous
// job started (the worker has just begun an idle sleep: the worst case);
// "random" waits a random 0-200 ms first (arrivals at random times).
func BenchmarkPickup(b *testing.B) {
	for _, c := range []struct {
		interval time.Duration
		random   bool
	}{{DefaultTaskCheckInterval, false}, {DefaultTaskCheckInterval, true}, {100 * time.Millisecond, false}, {100 * time.Millisecond, true}} {
		interval := c.interval
		arrival := "next"
		if c.random {
			arrival = "random"
		}
		b.Run(fmt.Sprintf("check=%s/arrival=%s", interval, arrival), func(b *testing.B) {
			svc, owner := benchService(b)
			p := &noop{name: "noop", started: make(chan time.Time, 1)}
			w, err := NewWorker(svc, pipelines.NewRegistry(p), pipelinetest.Loader{}, WorkerOptions{
				TaskCheckInterval: interval, WebhookWorkers: -1, Log: testLog()})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Start(); err != nil {
				b.Fatal(err)
			}
			defer w.Shutdown()
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.random {
					b.StopTimer()
					time.Sleep(rand.N(200 * time.Millisecond))
					b.StartTimer()
				}
				if _, err := svc.Submit(ctx, SubmitRequest{Owner: owner, Model: "noop", Cost: 1}); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				select {
				case at := <-p.started:
					lat = append(lat, at.Sub(t0))
				case <-time.After(10 * time.Second):
					b.Fatal("job not picked up in 10 s")
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat, "ms")
		})
	}
}
