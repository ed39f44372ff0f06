package ffmpeg

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func needFFmpeg(t testing.TB) {
	t.Helper()
	if err := Check(); err != nil {
		// make test installs ffmpeg; only a bare `go test` elsewhere may skip.
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// gradientFrame draws a moving diagonal gradient: frame i differs from i-1.
func gradientFrame(w, h, i int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := y*img.Stride + x*4
			img.Pix[o] = uint8((x + 4*i) % 256)
			img.Pix[o+1] = uint8(y % 256)
			img.Pix[o+2] = uint8(128 + 100*math.Sin(float64(i)/5))
			img.Pix[o+3] = 255
		}
	}
	return img
}

func sinePCM(seconds float64, hz float64) *bytes.Reader {
	n := int(seconds * 48000)
	b := make([]byte, n*4)
	for i := 0; i < n; i++ {
		v := int16(8000 * math.Sin(2*math.Pi*hz*float64(i)/48000))
		binary.LittleEndian.PutUint16(b[i*4:], uint16(v))
		binary.LittleEndian.PutUint16(b[i*4+2:], uint16(v))
	}
	return bytes.NewReader(b)
}

func TestEncodeAndProbe(t *testing.T) {
	needFFmpeg(t)
	cases := []struct {
		name     string
		w, h     int
		fps      int
		dur      time.Duration
		audio    bool
		pcmSecs  float64 // audio shorter than the video is padded
		wantAAC  bool
		wantSize [2]int
	}{
		{"no-audio-24fps", 160, 96, 24, 1500 * time.Millisecond, false, 0, false, [2]int{160, 96}},
		{"audio-30fps", 96, 160, 30, 2 * time.Second, true, 3, true, [2]int{96, 160}},
		{"short-audio-padded", 64, 64, 24, time.Second, true, 0.4, true, [2]int{64, 64}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "clip.mp4")
			o := Options{Width: c.w, Height: c.h, FPS: c.fps, Duration: c.dur, Out: out}
			if c.audio {
				o.Audio = &AudioSpec{PCM: sinePCM(c.pcmSecs, 440), FadeIn: 200 * time.Millisecond, FadeOut: 300 * time.Millisecond}
			}
			enc, err := NewEncoder(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			n := enc.FramesNeeded()
			if want := int(math.Round(c.dur.Seconds() * float64(c.fps))); n != want {
				t.Fatalf("FramesNeeded = %d, want %d", n, want)
			}
			for i := 0; i < n; i++ {
				if err := enc.WriteFrame(gradientFrame(c.w, c.h, i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			if err := enc.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			info, err := Probe(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			if info.Width != c.wantSize[0] || info.Height != c.wantSize[1] {
				t.Errorf("size %dx%d, want %v", info.Width, info.Height, c.wantSize)
			}
			if info.VideoCodec != "h264" || info.PixFmt != "yuv420p" {
				t.Errorf("codec %s/%s, want h264/yuv420p", info.VideoCodec, info.PixFmt)
			}
			if math.Abs(info.FPS-float64(c.fps)) > 0.01 {
				t.Errorf("fps %.3f, want %d", info.FPS, c.fps)
			}
			if info.Frames != n {
				t.Errorf("frames %d, want %d", info.Frames, n)
			}
			frame := 1 / float64(c.fps)
			if math.Abs(info.Duration-c.dur.Seconds()) > frame {
				t.Errorf("duration %.3f s, want %.3f within one frame", info.Duration, c.dur.Seconds())
			}
			if info.HasAudio != c.wantAAC {
				t.Errorf("HasAudio = %v, want %v", info.HasAudio, c.wantAAC)
			}
			if c.wantAAC {
				if info.AudioCodec != "aac" || info.SampleRate != 48000 || info.Channels != 2 {
					t.Errorf("audio %s %d Hz %d ch, want aac 48000 Hz 2 ch", info.AudioCodec, info.SampleRate, info.Channels)
				}
				if math.Abs(info.AudioDuration-c.dur.Seconds()) > 0.05 {
					t.Errorf("audio duration %.3f, want %.3f", info.AudioDuration, c.dur.Seconds())
				}
			}
			if !info.FastStart {
				t.Error("moov atom is not before mdat (faststart missing)")
			}
			// The middle frame decodes to what was written (within H.264 loss).
			mid := n / 2
			got, err := FrameAt(context.Background(), out, (float64(mid)+0.5)/float64(c.fps))
			if err != nil {
				t.Fatal(err)
			}
			want := gradientFrame(c.w, c.h, mid)
			var diff float64
			for i := 0; i < len(got.Pix); i += 4 {
				diff += math.Abs(float64(got.Pix[i]) - float64(want.Pix[i]))
			}
			if mad := diff / float64(c.w*c.h); mad > 12 {
				t.Errorf("decoded frame %d differs by %.1f (mean abs red), want < 12", mid, mad)
			}
		})
	}
}

func TestEncoderErrors(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	bad := []Options{
		{Width: 15, Height: 16, FPS: 24, Duration: time.Second, Out: "x.mp4"},
		{Width: 16, Height: 16, FPS: 25, Duration: time.Second, Out: "x.mp4"},
		{Width: 16, Height: 16, FPS: 24, Duration: 0, Out: "x.mp4"},
		{Width: 16, Height: 16, FPS: 24, Duration: time.Second},
		{Width: 16, Height: 16, FPS: 24, Duration: time.Second, Out: "x.mp4", Preset: "warp"},
		{Width: 16, Height: 16, FPS: 24, Duration: time.Second, Out: "x.mp4", Audio: &AudioSpec{}},
	}
	for i, o := range bad {
		if _, err := NewEncoder(context.Background(), o); err == nil {
			t.Errorf("case %d: options %+v accepted", i, o)
		}
	}
	// A missing binary fails at start with its name in the error.
	_, err := NewEncoder(context.Background(), Options{Binary: "/nonexistent/ffmpeg", Width: 16, Height: 16, FPS: 24, Duration: time.Second, Out: filepath.Join(dir, "a.mp4")})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/ffmpeg") {
		t.Errorf("missing binary: %v", err)
	}
	// Too few frames is an error at Close.
	enc, err := NewEncoder(context.Background(), Options{Width: 16, Height: 16, FPS: 24, Duration: time.Second, Out: filepath.Join(dir, "b.mp4")})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.WriteFrame(gradientFrame(16, 16, 0)); err != nil {
		t.Fatal(err)
	}
	if err := enc.WriteFrame(gradientFrame(8, 8, 0)); err == nil {
		t.Error("wrong frame size accepted")
	}
	if err := enc.Close(); err == nil || !strings.Contains(err.Error(), "1 of 24 frames") {
		t.Errorf("short stream: %v", err)
	}
	// An ffmpeg failure carries its stderr.
	enc, err = NewEncoder(context.Background(), Options{Width: 16, Height: 16, FPS: 24, Duration: time.Second, Out: filepath.Join(dir, "no/such/dir/c.mp4")})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 24; i++ {
		if enc.WriteFrame(gradientFrame(16, 16, i)) != nil {
			break
		}
	}
	if err := enc.Close(); err == nil || !strings.Contains(err.Error(), "ffmpeg") || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("bad output dir: %v", err)
	}
	var nilEnc *Encoder
	if err := nilEnc.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
}

func TestEncoderCancel(t *testing.T) {
	needFFmpeg(t)
	ctx, cancel := context.WithCancel(context.Background())
	enc, err := NewEncoder(ctx, Options{Width: 64, Height: 64, FPS: 24, Duration: 10 * time.Second, Out: filepath.Join(t.TempDir(), "c.mp4"),
		Audio: &AudioSpec{PCM: sinePCM(10, 220)}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := enc.WriteFrame(gradientFrame(64, 64, i)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := enc.WriteFrame(gradientFrame(64, 64, 5)); err == nil {
		t.Error("write after cancel succeeded")
	}
	done := make(chan error, 1)
	go func() { done <- enc.Close() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancel") {
			t.Errorf("Close after cancel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close hung after cancel")
	}
}

func TestParseProbe(t *testing.T) {
	js := `{"streams":[{"codec_type":"video","codec_name":"h264","width":720,"height":1280,"pix_fmt":"yuv420p","avg_frame_rate":"24/1","nb_frames":"96","duration":"4.000000"},
	{"codec_type":"audio","codec_name":"aac","sample_rate":"48000","channels":2,"duration":"4.000000"}],"format":{"duration":"4.010000"}}`
	info, err := parseProbe([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 720 || info.Height != 1280 || info.FPS != 24 || info.Frames != 96 || !info.HasAudio ||
		info.AudioCodec != "aac" || info.Duration != 4.01 || info.SampleRate != 48000 {
		t.Errorf("parsed %+v", info)
	}
	if _, err := parseProbe([]byte("{")); err == nil {
		t.Error("bad JSON accepted")
	}
	if r := parseRate("30000/1001"); math.Abs(r-29.97) > 0.01 {
		t.Errorf("parseRate = %v", r)
	}
}
