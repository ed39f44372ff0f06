package diffusion

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestShiftedLinearTimes(t *testing.T) {
	cases := []struct {
		name  string
		mu    float64
		steps int
		want  []float64
	}{
		{"mu 0 is linear", 0, 4, []float64{0, 0.25, 0.5, 0.75, 1}},
		// time_shift(-1.5, 1, t) = e^-1.5/(e^-1.5 + 1/t - 1) at t = 1/2:
		// e^-1.5/(e^-1.5 + 1) = 0.18242552.
		{"mu 1.5", 1.5, 2, []float64{0, math.Exp(-1.5) / (math.Exp(-1.5) + 1), 1}},
		{"one step", 1.5, 1, []float64{0, 1}},
		// t = 1/4: e^-1.5/(e^-1.5 + 3); t = 3/4: e^-1.5/(e^-1.5 + 1/3).
		{"mu 1.5, 4 steps", 1.5, 4, []float64{0, math.Exp(-1.5) / (math.Exp(-1.5) + 3), math.Exp(-1.5) / (math.Exp(-1.5) + 1),
			math.Exp(-1.5) / (math.Exp(-1.5) + 1.0/3), 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ShiftedLinear{Mu: c.mu}.Times(c.steps, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d times, want %d", len(got), len(c.want))
			}
			for i := range got {
				if math.Abs(got[i]-c.want[i]) > 1e-12 {
					t.Errorf("t[%d] = %.9f, want %.9f", i, got[i], c.want[i])
				}
			}
		})
	}
	for _, bad := range []struct {
		mu    float64
		steps int
	}{{1.5, 0}, {math.NaN(), 3}, {21, 3}} {
		if _, err := (ShiftedLinear{Mu: bad.mu}).Times(bad.steps, 0); err == nil {
			t.Errorf("mu %v steps %d: no error", bad.mu, bad.steps)
		}
	}
}

// TestResolutionShiftMatchesDiffusers: FLUX's resolution-dependent grids
// as diffusers computes them (diffusion/testdata/flow/flux-shift.json,
// written by scripts/reference/flux_shift.py in the reference
// environment): mu from the image tokens exactly, every time within the
// reference's float32 rounding.
func TestResolutionShiftMatchesDiffusers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "flow", "flux-shift.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Config struct {
			BaseTokens int     `json:"base_image_seq_len"`
			MaxTokens  int     `json:"max_image_seq_len"`
			BaseShift  float64 `json:"base_shift"`
			MaxShift   float64 `json:"max_shift"`
		} `json:"config"`
		Cases []struct {
			Steps, Tokens int
			Mu            float64
			Sigmas        []float64
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	s := ResolutionShift{BaseTokens: fx.Config.BaseTokens, MaxTokens: fx.Config.MaxTokens, BaseShift: fx.Config.BaseShift, MaxShift: fx.Config.MaxShift}
	if s != FluxShift || len(fx.Cases) < 5 {
		t.Fatalf("fixture config %+v (%d cases), FluxShift %+v", s, len(fx.Cases), FluxShift)
	}
	for _, c := range fx.Cases {
		mu, err := s.Mu(c.Tokens)
		if err != nil || math.Abs(mu-c.Mu) > 1e-12 {
			t.Errorf("%d tokens: mu %v (%v), diffusers %v", c.Tokens, mu, err, c.Mu)
		}
		times, err := s.Times(c.Steps, c.Tokens)
		if err != nil || len(times) != len(c.Sigmas) {
			t.Fatalf("%d steps, %d tokens: %d times (%v), diffusers %d sigmas", c.Steps, c.Tokens, len(times), err, len(c.Sigmas))
		}
		for i, sigma := range c.Sigmas {
			if d := math.Abs(times[i] - (1 - sigma)); d > 2e-7 {
				t.Errorf("%d steps, %d tokens: t[%d] = %.8f, diffusers 1 − σ = %.8f", c.Steps, c.Tokens, i, times[i], 1-sigma)
			}
		}
	}
	for _, bad := range []struct {
		s      ResolutionShift
		tokens int
	}{{FluxShift, 0}, {ResolutionShift{BaseTokens: 10, MaxTokens: 10}, 5}, {FluxShift, 1 << 30}} {
		if _, err := bad.s.Times(4, bad.tokens); err == nil {
			t.Errorf("%+v at %d tokens: no error", bad.s, bad.tokens)
		}
	}
}

// constNet returns, for every row, the velocity of its class: a constant
// field whose Euler integral is known in closed form.
type constNet struct {
	v     map[int64]float32
	calls atomic.Int64
	rows  atomic.Int64
	delay time.Duration
}

func (n *constNet) velocity(ctx context.Context, rows []flowRow) ([]float32, time.Duration, error) {
	n.calls.Add(1)
	n.rows.Add(int64(len(rows)))
	time.Sleep(n.delay)
	var out []float32
	for _, r := range rows {
		for range r.x {
			out = append(out, n.v[r.cond.class])
		}
	}
	return out, time.Millisecond, nil
}

// straightNet is the exact velocity field of rectified flow towards the
// data point of the row's class: v = (d − x)/(1 − t). Euler on any grid
// lands on d.
type straightNet struct {
	d     map[int64]float32
	delay time.Duration
}

func (n straightNet) velocity(ctx context.Context, rows []flowRow) ([]float32, time.Duration, error) {
	time.Sleep(n.delay)
	var out []float32
	for _, r := range rows {
		for _, x := range r.x {
			out = append(out, float32((float64(n.d[r.cond.class])-float64(x))/(1-r.t)))
		}
	}
	return out, 0, nil
}

func TestFlowGuidanceClosedForm(t *testing.T) {
	// Conditional rows move at 0.4, unconditional at −0.2; guidance g
	// gives −0.2 + g·0.6 on guided steps and 0.4 on the skipped ones.
	const vc, vu = 0.4, -0.2
	cases := []struct {
		name     string
		g        FlowGuidance
		steps    int
		rowsWant int64
	}{
		{"guided throughout", FlowGuidance{Scale: 1.5}, 5, 5 * 2},
		{"skip last step", FlowGuidance{Scale: 1.5, SkipLast: 1}, 5, 4*2 + 1},
		{"skip last 3", FlowGuidance{Scale: 2.5, SkipLast: 3}, 5, 2*2 + 3},
		{"scale 1 runs conditional rows only", FlowGuidance{Scale: 1}, 4, 4},
		{"scale 0 is unconditional", FlowGuidance{Scale: 0}, 3, 3 * 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			times, err := ShiftedLinear{Mu: 1.5}.Times(c.steps, 0)
			if err != nil {
				t.Fatal(err)
			}
			net := &constNet{v: map[int64]float32{1: vc, 0: vu}}
			b := newFlowBatcher(net, 8, false, nil)
			x0 := []float32{0.1, -0.3}
			j := newFlowJob([][]float32{append([]float32(nil), x0...)}, Euler{}, times, c.g, &flowCond{class: 1}, &flowCond{class: 0})
			if err := sampleFlow(context.Background(), b, j); err != nil {
				t.Fatal(err)
			}
			var shift float64
			for i := range c.steps {
				v := vc
				if c.g.guidedAt(i, c.steps) {
					v = vu + c.g.Scale*(vc-vu)
				}
				shift += (times[i+1] - times[i]) * v
			}
			for k := range x0 {
				want := math.Max(-1, math.Min(1, float64(x0[k])+shift))
				if math.Abs(float64(j.x[0][k])-want) > 1e-6 {
					t.Errorf("x[%d] = %v, want %v", k, j.x[0][k], want)
				}
			}
			if got := net.rows.Load(); got != c.rowsWant {
				t.Errorf("network rows %d, want %d", got, c.rowsWant)
			}
		})
	}
}

func TestFlowBatchingAcrossJobsLandsEachOnItsData(t *testing.T) {
	// Four jobs, two samples each, different targets; batched, they share
	// calls; each still lands on its own data point.
	d := map[int64]float32{1: 0.5, 2: -0.25, 3: 0.75, 4: 0.1, 0: 0}
	var calls, rows atomic.Int64
	b := newFlowBatcher(straightNet{d: d, delay: 2 * time.Millisecond}, 6, true,
		func(n int, _ time.Duration, err error) { calls.Add(1); rows.Add(int64(n)) })
	times, _ := ShiftedLinear{Mu: 1.5}.Times(6, 0)
	var wg sync.WaitGroup
	jobs := make([]*flowJob, 4)
	for k := range jobs {
		noise := [][]float32{{-0.9, 0.3, 0.2}, {0.7, -0.6, 0}}
		// Scale 1: only the conditional rows run, so the field is exact.
		jobs[k] = newFlowJob(noise, Euler{}, times, FlowGuidance{Scale: 1}, &flowCond{class: int64(k + 1)}, &flowCond{})
		wg.Go(func() {
			if err := sampleFlow(context.Background(), b, jobs[k]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for k, j := range jobs {
		for s, x := range j.x {
			for i, v := range x {
				if math.Abs(float64(v-d[int64(k+1)])) > 1e-5 {
					t.Errorf("job %d sample %d [%d] = %v, want %v", k, s, i, v, d[int64(k+1)])
				}
			}
		}
	}
	// 4 jobs × 2 rows × 6 steps = 48 rows in calls of at most 6 rows.
	if rows.Load() != 48 {
		t.Errorf("rows %d, want 48", rows.Load())
	}
	if c := calls.Load(); c >= 4*6 {
		t.Errorf("%d calls: the jobs did not share calls (unbatched would be 24)", c)
	}
}

func TestFlowCancelLeavesOthersRunning(t *testing.T) {
	net := &constNet{v: map[int64]float32{1: 0.1, 0: 0}, delay: 5 * time.Millisecond}
	b := newFlowBatcher(net, 8, true, nil)
	times, _ := ShiftedLinear{Mu: 1.5}.Times(20, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var progressed atomic.Int64
	victim := newFlowJob([][]float32{{0}}, Euler{}, times, FlowGuidance{Scale: 1.5}, &flowCond{class: 1}, &flowCond{})
	victim.progress = func(done, total int) {
		if progressed.Add(1) == 3 {
			cancel()
		}
	}
	other := newFlowJob([][]float32{{0}}, Euler{}, times, FlowGuidance{Scale: 1.5}, &flowCond{class: 1}, &flowCond{})
	var wg sync.WaitGroup
	var errVictim, errOther error
	wg.Go(func() { errVictim = sampleFlow(ctx, b, victim) })
	wg.Go(func() { errOther = sampleFlow(context.Background(), b, other) })
	wg.Wait()
	if !errors.Is(errVictim, context.Canceled) {
		t.Errorf("cancelled job: %v, want context.Canceled", errVictim)
	}
	if errOther != nil {
		t.Fatalf("other job: %v", errOther)
	}
	// Guided throughout: 0 + 1.5·(0.1 − 0) = 0.15 per unit time over [0, 1].
	if math.Abs(float64(other.x[0][0])-0.15) > 1e-6 {
		t.Errorf("other job x = %v, want 0.15", other.x[0][0])
	}
	if p := progressed.Load(); p > 4 {
		t.Errorf("cancelled job reported progress %d times after cancel at 3", p)
	}
}

func TestFlowGuidanceCheck(t *testing.T) {
	for _, c := range []struct {
		g  FlowGuidance
		ok bool
	}{
		{FlowGuidance{Scale: 1.5, SkipLast: 1}, true},
		{FlowGuidance{Scale: -1}, false},
		{FlowGuidance{Scale: math.NaN()}, false},
		{FlowGuidance{Scale: 21}, false},
		{FlowGuidance{Scale: 1.5, SkipLast: 31}, false},
		{FlowGuidance{Scale: 1.5, SkipLast: -1}, false},
	} {
		if err := c.g.check(30); (err == nil) != c.ok {
			t.Errorf("%+v: err %v, want ok=%v", c.g, err, c.ok)
		}
	}
}
