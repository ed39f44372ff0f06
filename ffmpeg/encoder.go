// Package ffmpeg is the only place that runs the ffmpeg and ffprobe
// binaries: it encodes streamed RGBA frames (and optional PCM audio) to an
// H.264/AAC MP4, probes files and extracts frames.
package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AudioSpec is an audio track streamed to ffmpeg as raw PCM (signed 16-bit
// little-endian, interleaved) through a second pipe (fd 3 of the child).
type AudioSpec struct {
	// SampleRate in Hz; 0 means 48000.
	SampleRate int
	// Channels; 0 means 2.
	Channels int
	// PCM yields s16le interleaved samples. It is read until EOF or until
	// the encoder has the duration it needs; shorter audio is padded with
	// silence up to the video duration.
	PCM io.Reader
	// FadeIn and FadeOut are applied by ffmpeg (afade) at both ends.
	FadeIn, FadeOut time.Duration
	// Bitrate of the AAC track; 0 means 128k.
	Bitrate string
}

// Options configures an Encoder.
type Options struct {
	// Binary is the ffmpeg executable; "" means "ffmpeg" on PATH.
	Binary string
	// Width and Height of the frames (even numbers; yuv420p needs them).
	Width, Height int
	// FPS is 24 or 30.
	FPS int
	// Duration of the output; frames beyond it are dropped and the audio is
	// cut to it (-t).
	Duration time.Duration
	// CRF of libx264 (0 means 20) and Preset (default "veryfast").
	CRF    int
	Preset string
	// Audio adds an AAC track; nil means no audio stream.
	Audio *AudioSpec
	// Out is the output MP4 path.
	Out string
}

// Encoder streams frames into an ffmpeg process.
type Encoder struct {
	opts    Options
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tailBuffer
	frames  int
	need    int
	audioWG sync.WaitGroup
	audioW  *os.File
	audioE  error
	closed  bool
	err     error
	ctx     context.Context
	frameSz int
	mu      sync.Mutex
}

// Frames returns the number of frames the duration needs at the frame rate.
func (o Options) Frames() int {
	return int(math.Round(o.Duration.Seconds() * float64(o.FPS)))
}

func (o *Options) validate() error {
	if o.Width <= 0 || o.Height <= 0 || o.Width%2 != 0 || o.Height%2 != 0 {
		return fmt.Errorf("ffmpeg: frame size %dx%d must be positive and even", o.Width, o.Height)
	}
	if o.FPS != 24 && o.FPS != 30 {
		return fmt.Errorf("ffmpeg: fps %d not supported (24 or 30)", o.FPS)
	}
	if o.Duration <= 0 || o.Duration > 10*time.Minute {
		return fmt.Errorf("ffmpeg: duration %v out of range", o.Duration)
	}
	if o.Out == "" {
		return errors.New("ffmpeg: no output path")
	}
	if o.Binary == "" {
		o.Binary = "ffmpeg"
	}
	if o.CRF == 0 {
		o.CRF = 20
	}
	if o.CRF < 0 || o.CRF > 51 {
		return fmt.Errorf("ffmpeg: crf %d out of range 0..51", o.CRF)
	}
	if o.Preset == "" {
		o.Preset = "veryfast"
	}
	switch o.Preset {
	case "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow":
	default:
		return fmt.Errorf("ffmpeg: unknown x264 preset %q", o.Preset)
	}
	if a := o.Audio; a != nil {
		if a.PCM == nil {
			return errors.New("ffmpeg: audio spec without PCM source")
		}
		if a.SampleRate == 0 {
			a.SampleRate = 48000
		}
		if a.Channels == 0 {
			a.Channels = 2
		}
		if a.Bitrate == "" {
			a.Bitrate = "128k"
		}
		if a.SampleRate < 8000 || a.SampleRate > 192000 || a.Channels < 1 || a.Channels > 2 {
			return fmt.Errorf("ffmpeg: audio %d Hz x %d channels not supported", a.SampleRate, a.Channels)
		}
	}
	return nil
}

// args builds the ffmpeg command line.
func (o Options) args() []string {
	dur := strconv.FormatFloat(o.Duration.Seconds(), 'f', 6, 64)
	a := []string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y",
		"-thread_queue_size", "512",
		"-f", "rawvideo", "-pix_fmt", "rgba", "-s", fmt.Sprintf("%dx%d", o.Width, o.Height),
		"-framerate", strconv.Itoa(o.FPS), "-i", "pipe:0"}
	if au := o.Audio; au != nil {
		a = append(a, "-thread_queue_size", "512",
			"-f", "s16le", "-ar", strconv.Itoa(au.SampleRate), "-ac", strconv.Itoa(au.Channels),
			"-i", "pipe:3")
	}
	a = append(a, "-map", "0:v:0")
	if au := o.Audio; au != nil {
		a = append(a, "-map", "1:a:0")
		var f []string
		// Pad short audio with silence, then cut to the exact duration.
		f = append(f, "apad", "atrim=0:"+dur)
		if au.FadeIn > 0 {
			f = append(f, fmt.Sprintf("afade=t=in:st=0:d=%.3f", au.FadeIn.Seconds()))
		}
		if au.FadeOut > 0 {
			st := math.Max(0, o.Duration.Seconds()-au.FadeOut.Seconds())
			f = append(f, fmt.Sprintf("afade=t=out:st=%.3f:d=%.3f", st, au.FadeOut.Seconds()))
		}
		a = append(a, "-af", strings.Join(f, ","), "-c:a", "aac", "-b:a", au.Bitrate)
	}
	a = append(a, "-c:v", "libx264", "-preset", o.Preset, "-crf", strconv.Itoa(o.CRF),
		"-pix_fmt", "yuv420p", "-r", strconv.Itoa(o.FPS),
		"-movflags", "+faststart", "-t", dur, "-f", "mp4", o.Out)
	return a
}

// NewEncoder starts ffmpeg. Cancelling ctx kills the process; Close must
// still be called.
func NewEncoder(ctx context.Context, o Options) (*Encoder, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, o.Binary, o.args()...)
	ownProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	e := &Encoder{opts: o, cmd: cmd, stderr: &tailBuffer{max: 4096}, need: o.Frames(), ctx: ctx,
		frameSz: o.Width * o.Height * 4}
	cmd.Stderr = e.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("ffmpeg: %w", err)
	}
	e.stdin = stdin
	var audioR *os.File
	if o.Audio != nil {
		r, w, err := os.Pipe()
		if err != nil {
			stdin.Close()
			return nil, fmt.Errorf("ffmpeg: audio pipe: %w", err)
		}
		audioR, e.audioW = r, w
		cmd.ExtraFiles = []*os.File{r} // fd 3 in the child
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		if audioR != nil {
			audioR.Close()
			e.audioW.Close()
		}
		return nil, fmt.Errorf("ffmpeg: cannot start %q: %w", o.Binary, err)
	}
	if audioR != nil {
		audioR.Close() // the child holds its own copy
		e.audioWG.Add(1)
		go e.pumpAudio()
	}
	return e, nil
}

// pumpAudio copies the PCM source into the audio pipe, at most the bytes the
// duration needs (plus a little), then closes the pipe.
func (e *Encoder) pumpAudio() {
	defer e.audioWG.Done()
	a := e.opts.Audio
	limit := int64(math.Ceil(e.opts.Duration.Seconds()*float64(a.SampleRate)+float64(a.SampleRate)/10)) * int64(a.Channels) * 2
	_, err := io.Copy(e.audioW, io.LimitReader(a.PCM, limit))
	if err != nil && !errors.Is(err, os.ErrClosed) && !isBrokenPipe(err) {
		e.audioE = fmt.Errorf("ffmpeg: audio: %w", err)
	}
	e.audioW.Close()
}

func isBrokenPipe(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "file already closed"))
}

// FramesNeeded is the number of frames that make the requested duration.
func (e *Encoder) FramesNeeded() int { return e.need }

// WriteFrame streams one frame; it must be Width x Height.
func (e *Encoder) WriteFrame(img *image.RGBA) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("ffmpeg: write after close")
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w != e.opts.Width || h != e.opts.Height {
		return fmt.Errorf("ffmpeg: frame %dx%d, encoder expects %dx%d", w, h, e.opts.Width, e.opts.Height)
	}
	var err error
	if img.Stride == w*4 {
		_, err = e.stdin.Write(img.Pix[:e.frameSz])
	} else {
		for y := 0; y < h && err == nil; y++ {
			_, err = e.stdin.Write(img.Pix[y*img.Stride : y*img.Stride+w*4])
		}
	}
	if err != nil {
		if cerr := e.ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("ffmpeg: writing frame %d: %w (ffmpeg said: %s)", e.frames+1, err, e.stderr.String())
	}
	e.frames++
	return nil
}

// Close finishes the stream and waits for ffmpeg. It is idempotent; later
// calls return the first result. It fails when fewer frames than the
// duration needs were written.
func (e *Encoder) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.err
	}
	e.closed = true
	e.stdin.Close()
	werr := e.cmd.Wait()
	if e.audioW != nil {
		e.audioW.Close() // unblocks the pump if ffmpeg died early
	}
	e.audioWG.Wait()
	switch {
	case e.ctx.Err() != nil:
		e.err = fmt.Errorf("ffmpeg: cancelled: %w", e.ctx.Err())
	case werr != nil:
		e.err = fmt.Errorf("ffmpeg failed: %v: %s", werr, strings.TrimSpace(e.stderr.String()))
	case e.audioE != nil:
		e.err = e.audioE
	case e.frames < e.need:
		e.err = fmt.Errorf("ffmpeg: only %d of %d frames written for %v at %d fps", e.frames, e.need, e.opts.Duration, e.opts.FPS)
	}
	return e.err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
