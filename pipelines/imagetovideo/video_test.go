package imagetovideo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fashiond/ffmpeg"
	"fashiond/internal/golden"
	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/scene"
	"fashiond/spec"
)

// goldenList holds the recorded digests (golden.Digest) of this package's
// real runs; testdata/golden.sha256 says when and how they were recorded.
//
//go:embed testdata/golden.sha256
var goldenList string

func needFFmpeg(t testing.TB) {
	t.Helper()
	if err := ffmpeg.Check(); err != nil {
		// make test installs ffmpeg; only a bare `go test` elsewhere may skip.
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// dump writes a PNG under FASHIOND_TEST_OUT for looking at (nothing when
// it is unset).
func dump(t testing.TB, name string, img image.Image) { testenv.WritePNG(t, name, img) }

type progressLog struct {
	mu     sync.Mutex
	stages []string
	last   float64
	back   bool
	detail []string
}

func (p *progressLog) fn(stage string, f float64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.stages) == 0 || p.stages[len(p.stages)-1] != stage {
		p.stages = append(p.stages, stage)
	}
	if f < p.last {
		p.back = true
	}
	p.last = f
	if detail != "" {
		p.detail = append(p.detail, detail)
	}
}

func meanLuma(img *image.RGBA, r image.Rectangle) float64 {
	var s float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			i := y*img.Stride + x*4
			s += 0.299*float64(img.Pix[i]) + 0.587*float64(img.Pix[i+1]) + 0.114*float64(img.Pix[i+2])
		}
	}
	return s / float64(r.Dx()*r.Dy())
}

func meanAbsDiff(a, b *image.RGBA) float64 {
	var s float64
	for i := 0; i < len(a.Pix); i += 4 {
		for c := 0; c < 3; c++ {
			s += math.Abs(float64(a.Pix[i+c]) - float64(b.Pix[i+c]))
		}
	}
	return s / float64(len(a.Pix)/4*3)
}

// TestImageToVideo runs the pipeline end to end and checks the MP4.
func TestImageToVideo(t *testing.T) {
	needFFmpeg(t)
	perc := pipelinetest.Perception(t)
	pl := New(perc, Options{})
	cases := []struct {
		name     string
		image    string
		prompt   string
		duration int
		aspect   string
		audio    bool
		w, h     int
		move     Move
		bed      Bed
	}{
		{"default-16x9-silent", "images/fashn_model.webp", "", 4, "16:9", false, 1280, 720, PushIn, ""},
		{"orbit-9x16-street", "images/fashn_garment.webp", "slow orbit around the model on a city street", 4, "9:16", true, 720, 1280, Orbit, BedStreet},
		{"pan-9x16-beach-8s", "images/fashn_model.webp", "pan left, waves on the beach", 8, "9:16", true, 720, 1280, PanLeft, BedBeach},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"imageUrl": "file:" + c.image, "prompt": c.prompt,
				"duration": c.duration, "aspectRatio": c.aspect, "generateAudio": c.audio})
			var pr progressLog
			req := &pipelines.Request{JobID: "t", Model: "image-to-video", Inputs: pipelinetest.Inputs(t, "image-to-video", string(in)),
				Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)}, Progress: pr.fn}
			res, err := pl.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != 1 || len(res.Outputs[0].Video) == 0 || res.Outputs[0].Image != nil {
				t.Fatalf("want one video output, got %+v", res.Outputs)
			}
			o := res.Outputs[0]
			if o.Path != "reference" || !strings.Contains(o.Method, string(c.move)) {
				t.Errorf("method %q path %q, want move %s", o.Method, o.Path, c.move)
			}
			if c.audio && !strings.Contains(o.Method, string(c.bed)) {
				t.Errorf("method %q lacks audio bed %s", o.Method, c.bed)
			}
			if c.audio && !strings.Contains(strings.Join(o.Notes, "\n"), "("+string(c.bed)+"), not audio generated from the image: chosen from the prompt's word") {
				t.Errorf("notes %q do not say why the bed %s was chosen", o.Notes, c.bed)
			}
			if len(o.Checks) != 2 || o.Checks[0].Name != "video_person_count_change" || !o.Checks[0].Pass || !o.Checks[1].Pass {
				t.Errorf("checks %+v, want the two video checks passing", o.Checks)
			}
			path := testenv.OutPath(t, c.name+".mp4")
			if path == "" {
				path = filepath.Join(t.TempDir(), "v.mp4")
			}
			if err := os.WriteFile(path, o.Video, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			info, err := ffmpeg.Probe(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Width != c.w || info.Height != c.h {
				t.Errorf("size %dx%d, want %dx%d", info.Width, info.Height, c.w, c.h)
			}
			if info.VideoCodec != "h264" || info.PixFmt != "yuv420p" || !info.FastStart {
				t.Errorf("video %s/%s faststart=%v", info.VideoCodec, info.PixFmt, info.FastStart)
			}
			frame := 1 / info.FPS
			if math.Abs(info.Duration-float64(c.duration)) > frame || math.Abs(info.VideoDuration-float64(c.duration)) > frame {
				t.Errorf("duration %.3f (video %.3f), want %d within one frame", info.Duration, info.VideoDuration, c.duration)
			}
			if info.HasAudio != c.audio {
				t.Errorf("audio stream present = %v, want %v", info.HasAudio, c.audio)
			}
			if c.audio && info.AudioCodec != "aac" {
				t.Errorf("audio codec %s", info.AudioCodec)
			}
			if pr.back || len(pr.stages) < 3 || !strings.HasPrefix(pr.detail[len(pr.detail)-2], "frame ") {
				t.Errorf("progress stages %v details ...%v backwards=%v", pr.stages, pr.detail[max(0, len(pr.detail)-3):], pr.back)
			}
			// Sampled frames: never black, never frozen, the corner does not
			// flicker.
			var prev *image.RGBA
			var corner []float64
			cr := image.Rect(8, 8, 72, 72)
			for k := 0; k < 6; k++ {
				ts := (float64(k) + 0.5) * float64(c.duration) / 6
				f, err := ffmpeg.FrameAt(ctx, path, ts)
				if err != nil {
					t.Fatal(err)
				}
				if k == 0 || k == 5 {
					dump(t, fmt.Sprintf("%s_f%d.png", c.name, k), f)
				}
				if l := meanLuma(f, f.Rect); l < 40 {
					t.Errorf("frame at %.2fs mean luma %.1f: black", ts, l)
				}
				if prev != nil {
					if d := meanAbsDiff(prev, f); d < 0.3 {
						t.Errorf("frames around %.2fs identical (mean abs diff %.3f): frozen", ts, d)
					}
				}
				prev = f
				corner = append(corner, meanLuma(f, cr))
			}
			if c.move == PushIn {
				var m, v float64
				for _, x := range corner {
					m += x
				}
				m /= float64(len(corner))
				for _, x := range corner {
					v += (x - m) * (x - m)
				}
				if sd := math.Sqrt(v / float64(len(corner))); sd > 2.5 {
					t.Errorf("corner patch luma std %.2f over time (values %v), want < 2.5", sd, corner)
				}
			}
		})
	}
}

func TestChooseMoveAndBed(t *testing.T) {
	moves := []struct {
		prompt string
		want   Move
	}{
		{"", PushIn},
		{"she walks confidently", PushIn},
		{"Slow zoom out to reveal the street", PullOut},
		{"camera pans left across the studio", PanLeft},
		{"Pan right while wind blows", PanRight},
		{"orbiting shot around the model", Orbit},
		{"tilt up from boots to hat", TiltUp},
		{"tilt down", TiltDown},
		{"static camera, she breathes", Static},
		{"push in, then pull out", PushIn},
		{"pull out, then push in", PullOut},
		{"panorama of the city", PushIn},
	}
	for _, c := range moves {
		if got := ChooseMove(c.prompt); got != c.want {
			t.Errorf("ChooseMove(%q) = %s, want %s", c.prompt, got, c.want)
		}
	}
	beds := []struct {
		prompt string
		want   Bed
	}{
		{"", BedStudio},
		{"walking down a rainy street", BedRain},
		{"on the beach at sunset", BedBeach},
		{"Runway walk, Paris fashion week", BedRunway},
		{"sipping coffee in a cafe", BedCafe},
		{"city street at night", BedStreet},
		{"in a forest clearing", BedNature},
		{"barefoot on the seashore", BedStudio},
	}
	for _, c := range beds {
		if got := ChooseBed(c.prompt); got != c.want {
			t.Errorf("ChooseBed(%q) = %s, want %s", c.prompt, got, c.want)
		}
	}
}

func TestSynthesizeBeds(t *testing.T) {
	rms := map[Bed]float64{}
	for _, b := range []Bed{BedStudio, BedStreet, BedNature, BedRunway, BedBeach, BedCafe, BedRain} {
		pcm := SynthesizeBed(b, 2, 48000, 7)
		if len(pcm) != 2*48000*4 {
			t.Fatalf("%s: %d bytes, want %d", b, len(pcm), 2*48000*4)
		}
		var s float64
		var peak int
		for i := 0; i < len(pcm); i += 2 {
			v := int(int16(binary.LittleEndian.Uint16(pcm[i:])))
			s += float64(v * v)
			peak = max(peak, v, -v)
		}
		r := math.Sqrt(s / float64(len(pcm)/2))
		rms[b] = r
		if r < 30 || peak > 32767*8/10 {
			t.Errorf("%s: rms %.0f peak %d (want audible, below -2 dBFS)", b, r, peak)
		}
		again := SynthesizeBed(b, 2, 48000, 7)
		if string(again) != string(pcm) {
			t.Errorf("%s: not deterministic", b)
		}
	}
	if rms[BedRunway] <= rms[BedStudio] {
		t.Errorf("runway beat (rms %.0f) should be louder than room tone (%.0f)", rms[BedRunway], rms[BedStudio])
	}
}

func TestResolve(t *testing.T) {
	p := New(nil, Options{})
	f := false
	cases := []struct {
		in      Inputs
		ok      bool
		w, h, d int
		audio   bool
	}{
		{Inputs{Duration: 6, AspectRatio: "9:16", GenerateAudio: true}, true, 720, 1280, 6, true},
		{Inputs{Duration: 4, AspectRatio: "16:9", GenerateAudio: f}, true, 1280, 720, 4, false},
		{Inputs{Duration: 8, AspectRatio: "9:16", GenerateAudio: true}, true, 720, 1280, 8, true},
		{Inputs{Duration: 6, AspectRatio: "1:1"}, false, 0, 0, 0, false},
	}
	for _, c := range cases {
		s, err := p.resolve(c.in)
		if (err == nil) != c.ok {
			t.Errorf("%+v: err %v", c.in, err)
			continue
		}
		if c.ok && (s.Width != c.w || s.Height != c.h || s.Duration.Seconds() != float64(c.d) || s.Audio != c.audio || s.FPS != 24) {
			t.Errorf("%+v: %+v", c.in, s)
		}
	}
}

func FuzzChooseMove(f *testing.F) {
	for _, s := range []string{"", "pan left", "zoom", "orbit 360 around", "  PUSH--in!!", "café ☕ rain", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := ChooseMove(s)
		switch m {
		case PushIn, PullOut, PanLeft, PanRight, Orbit, TiltUp, TiltDown, Static:
		default:
			t.Fatalf("ChooseMove(%q) = %q", s, m)
		}
		if b := ChooseBed(s); b == "" {
			t.Fatalf("ChooseBed(%q) empty", s)
		}
	})
}

// BenchmarkRenderFrame measures per-frame synthesis (layers precomputed).
func BenchmarkRenderFrame(b *testing.B) {
	perc := pipelinetest.Perception(b)
	img := pipelinetest.Image(b, "images/fashn_model.webp")
	sc, err := scene.Layers(context.Background(), perc, img, scene.Options{WithDepth: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		w, h int
		mv   Move
	}{{"9x16-push-in", 720, 1280, PushIn}, {"16x9-orbit", 1280, 720, Orbit}} {
		b.Run(c.name, func(b *testing.B) {
			r, _ := newRenderer(sc, c.mv, c.w, c.h, classicalExtend)
			out := image.NewRGBA(image.Rect(0, 0, c.w, c.h))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.render(out, float64(i%96)/95, float64(i%96)/24)
			}
		})
	}
}

// BenchmarkGenerate times whole clips (9:16, audio on, default push-in) and
// reports the share of frame synthesis and of waiting on the encoder.
func BenchmarkGenerate(b *testing.B) {
	needFFmpeg(b)
	perc := pipelinetest.Perception(b)
	pl := New(perc, Options{})
	img := pipelinetest.Image(b, "images/fashn_model.webp")
	for _, d := range []int{4, 6, 8} {
		b.Run(fmt.Sprintf("%ds", d), func(b *testing.B) {
			spec, err := pl.resolve(Inputs{Duration: d, AspectRatio: "9:16"})
			if err != nil {
				b.Fatal(err)
			}
			var st *Stats
			for i := 0; i < b.N; i++ {
				_, st, err = pl.Generate(context.Background(), img, spec, pipelinetest.NoProgress)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(st.Layers.Seconds(), "layers-s")
			b.ReportMetric(st.Synthesis.Seconds(), "synthesis-s")
			b.ReportMetric(st.EncodeWait.Seconds(), "encode-wait-s")
			b.ReportMetric(st.Synthesis.Seconds()/st.Total.Seconds(), "synthesis-share")
			b.ReportMetric(float64(st.Synthesis.Milliseconds())/float64(st.Frames), "ms/frame")
		})
	}
}

// BenchmarkEncodeOnly measures ffmpeg's share alone: 96 precomputed
// 720x1280 frames (4 s at 24 fps) with audio, no synthesis.
func BenchmarkEncodeOnly(b *testing.B) {
	needFFmpeg(b)
	frames := make([]*image.RGBA, 8)
	for k := range frames {
		f := image.NewRGBA(image.Rect(0, 0, 720, 1280))
		for i := range f.Pix {
			f.Pix[i] = uint8((i/4)%720/3 + k*5)
		}
		frames[k] = f
	}
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "e.mp4")
		pcm := SynthesizeBed(BedStudio, 4.1, 48000, 1)
		enc, err := ffmpeg.NewEncoder(context.Background(), ffmpeg.Options{Width: 720, Height: 1280, FPS: 24,
			Duration: 4e9, CRF: 20, Preset: "veryfast", Out: out,
			Audio: &ffmpeg.AudioSpec{PCM: bytesReader(pcm)}})
		if err != nil {
			b.Fatal(err)
		}
		for k := 0; k < enc.FramesNeeded(); k++ {
			if err := enc.WriteFrame(frames[k%len(frames)]); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// TestRenderWithoutPerson: a flat-lay (no person) still animates with the
// camera move alone.
func TestRenderWithoutPerson(t *testing.T) {
	perc := pipelinetest.Perception(t)
	sc, err := scene.Layers(context.Background(), perc, pipelinetest.Image(t, "garments/flatlay_tee_red.png"), scene.Options{WithDepth: true})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newRenderer(sc, ChooseMove(""), 1280, 720, classicalExtend)
	a := image.NewRGBA(image.Rect(0, 0, 1280, 720))
	b := image.NewRGBA(a.Rect)
	r.render(a, 0, 0)
	r.render(b, 1, 4)
	if err := golden.CheckDigest(goldenList, "flatlay/first", a); err != nil {
		t.Error(err)
	}
	if err := golden.CheckDigest(goldenList, "flatlay/last", b); err != nil {
		t.Error(err)
	}
	if d := meanAbsDiff(a, b); d < 0.5 {
		t.Errorf("first and last frame differ by %.2f: frozen", d)
	}
	for _, f := range []*image.RGBA{a, b} {
		if l := meanLuma(f, f.Rect); l < 60 {
			t.Errorf("mean luma %.1f: too dark for a light flat-lay", l)
		}
	}
	dump(t, "flatlay_last.png", b)
}

// TestGenerateCancel: cancelling mid-render stops ffmpeg and returns the
// context's error promptly.
func TestGenerateCancel(t *testing.T) {
	needFFmpeg(t)
	pl := New(pipelinetest.Perception(t), Options{})
	spec, err := pl.resolve(Inputs{Duration: 8, AspectRatio: "16:9"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := func(stage string, f float64, d string) {
		if d == "frame 12/192" {
			cancel()
		}
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := pl.Generate(ctx, pipelinetest.Image(t, "images/astronaut.png"), spec, progress)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancel") {
			t.Fatalf("cancelled generation returned %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("generation did not stop after cancel")
	}
}

// TestMappingContinuous: for every camera move the per-frame mappings of
// both layers are continuous between neighbouring grid nodes (a jump would
// tear or cut the person at its silhouette).
func TestMappingContinuous(t *testing.T) {
	perc := pipelinetest.Perception(t)
	sc, err := scene.Layers(context.Background(), perc, pipelinetest.Image(t, "images/fashn_garment.webp"), scene.Options{WithDepth: true})
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewRGBA(image.Rect(0, 0, 720, 1280))
	for _, mv := range []Move{PushIn, PullOut, PanLeft, PanRight, Orbit, TiltUp, TiltDown, Static} {
		r, _ := newRenderer(sc, mv, 720, 1280, classicalExtend)
		gw := 720/gridStep + 2
		for _, ft := range []float64{0, 0.3, 0.7, 1} {
			r.render(out, ft, ft*4)
			if err := golden.CheckDigest(goldenList, fmt.Sprintf("%s/%.1f", mv, ft), out); err != nil {
				t.Error(err)
			}
			worst := 0.0
			for k := 0; k+4 < len(r.grid); k += 4 {
				if (k/4)%gw == gw-1 {
					continue
				}
				for c := 0; c < 4; c++ {
					worst = math.Max(worst, math.Abs(float64(r.grid[k+4+c]-r.grid[k+c])))
				}
			}
			if worst > 2*gridStep {
				t.Errorf("%s at t=%.1f: neighbouring grid nodes map %.1f px apart (step %d)", mv, ft, worst, gridStep)
			}
		}
	}
}

// TestDecodeInputsDefaults: inputs that did not come through the API get
// the spec's defaults when the pipeline decodes them (audio on, 6 s, 9:16).
func TestDecodeInputsDefaults(t *testing.T) {
	for raw, want := range map[string]Inputs{
		`{"imageUrl":"x"}`:                       {ImageURL: "x", Duration: 6, AspectRatio: "9:16", GenerateAudio: true},
		`{"imageUrl":"x","generateAudio":false}`: {ImageURL: "x", Duration: 6, AspectRatio: "9:16", GenerateAudio: false},
		`{"imageUrl":"x","duration":4,"aspectRatio":"16:9","generateAudio":null}`: {ImageURL: "x", Duration: 4, AspectRatio: "16:9", GenerateAudio: true},
	} {
		var in Inputs
		if err := spec.Decode(spec.ModelImageToVideo, json.RawMessage(raw), &in); err != nil || in != want {
			t.Fatalf("%s: decoded %+v (%v), want %+v", raw, in, err, want)
		}
	}
}
