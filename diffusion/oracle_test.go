package diffusion

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion/clip"
	"fashiond/inference"
	"fashiond/internal/testenv"
)

// The contract models are made by scripts/setup-contract-models.sh (part of
// make setup); see testdata/README.md.
const contractDir = "testdata/contract"

func contract(t testing.TB, variant string) string {
	t.Helper()
	dir := filepath.Join(contractDir, variant)
	if _, err := os.Stat(filepath.Join(dir, fileIndex)); err != nil {
		t.Fatalf("contract model %s missing: %v (run make setup)", variant, err)
	}
	return dir
}

func testRuntime(t testing.TB) *inference.Runtime {
	t.Helper()
	lib := testenv.ORTLib()
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: lib, IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("open runtime: %v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func loadModel(t testing.TB, rt *inference.Runtime, dir string, opts Options) *Model {
	t.Helper()
	m, err := Load(context.Background(), rt, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// oracle is the closed form of a contract model (fashiond_oracle.json).
type oracle struct {
	Scaling float64 `json:"scaling_factor"`
	Factor  int     `json:"vae_factor"`
	Text    struct {
		F   []float32 `json:"f"`
		Phi []float32 `json:"phi"`
	} `json:"text"`
	UNet struct {
		W   [][]float64 `json:"W"`
		A   []float64   `json:"a"`
		U   []float64   `json:"u"`
		V   []float64   `json:"v"`
		Psi []float64   `json:"psi"`
		Amp float64     `json:"amp"`
		K   *float64    `json:"lcm_k"`
		Q   []float64   `json:"lcm_q"`
	} `json:"unet"`
	VAE struct {
		A    [][]float64 `json:"A"`
		Bias []float64   `json:"bias"`
	} `json:"vae"`
	tok *clip.Tokenizer
}

func loadOracle(t testing.TB, dir string) *oracle {
	t.Helper()
	var o oracle
	b, err := os.ReadFile(filepath.Join(dir, "fashiond_oracle.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if o.tok, err = clip.Load(filepath.Join(dir, dirTokenizer)); err != nil {
		t.Fatal(err)
	}
	return &o
}

// meanHidden is the text encoder's output averaged over the 77 positions.
func (o *oracle) meanHidden(prompt string) []float64 {
	ids := o.tok.EncodePadded(prompt, 77)
	m := make([]float64, len(o.Text.F))
	for _, id := range ids {
		for d := range m {
			arg := float32(id)*o.Text.F[d] + o.Text.Phi[d]
			m[d] += math.Sin(float64(arg))
		}
	}
	for d := range m {
		m[d] /= float64(len(ids))
	}
	return m
}

// x0 is the oracle's clean latent [4][h][w] for a prompt; tcond is the LCM
// guidance embedding or nil.
func (o *oracle) x0(prompt string, h, w int, tcond []float32) []float64 {
	m := o.meanHidden(prompt)
	out := make([]float64, 4*h*w)
	for c := range 4 {
		g0 := 0.0
		for d, v := range m {
			g0 += o.UNet.W[c][d] * v
		}
		if tcond != nil {
			s := 0.0
			for e, q := range o.UNet.Q {
				s += float64(tcond[e]) * q
			}
			g0 += *o.UNet.K * s
		}
		for i := range h {
			for j := range w {
				p := o.UNet.A[c] * math.Sin(o.UNet.U[c]*float64(i)+o.UNet.V[c]*float64(j)+o.UNet.Psi[c])
				out[c*h*w+i*w+j] = math.Tanh(g0+p) * o.UNet.Amp
			}
		}
	}
	return out
}

// decode is the VAE decoder after the engine's 1/scaling, mapped to [0, 1]
// pixels [3][H][W].
func (o *oracle) decode(z []float64, h, w int) []float64 {
	f := o.Factor
	W, H := w*f, h*f
	out := make([]float64, 3*W*H)
	for c := range 3 {
		for y := range H {
			for x := range W {
				v := o.VAE.Bias[c]
				for k := range 4 {
					v += o.VAE.A[c][k] * z[k*h*w+(y/f)*w+x/f] / o.Scaling
				}
				out[c*W*H+y*W+x] = math.Max(0, math.Min(1, v/2+0.5))
			}
		}
	}
	return out
}

// cfg is x0(neg) + w·(x0(pos) − x0(neg)).
func cfg(neg, pos []float64, w float64) []float64 {
	out := make([]float64, len(pos))
	for i := range out {
		out[i] = neg[i] + w*(pos[i]-neg[i])
	}
	return out
}

// maxDiff is the largest absolute difference.
func maxDiff(a []float32, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-b[i]))
	}
	return d
}

// spread is max − min, to show a test is not comparing flat images.
func spread(v []float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return hi - lo
}

func stringsContains(s, sub string) bool { return strings.Contains(s, sub) }
