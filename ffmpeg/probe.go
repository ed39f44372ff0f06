package ffmpeg

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ProbeInfo describes a media file.
type ProbeInfo struct {
	// Duration of the container in seconds.
	Duration float64
	// Video stream properties (zero when there is no video stream).
	Width, Height int
	FPS           float64
	Frames        int
	VideoCodec    string
	PixFmt        string
	// VideoDuration is the video stream's own duration in seconds.
	VideoDuration float64
	HasAudio      bool
	AudioCodec    string
	// AudioDuration, SampleRate and Channels of the first audio stream.
	AudioDuration float64
	SampleRate    int
	Channels      int
	// FastStart is true when the moov atom precedes mdat (web playback
	// starts before the whole file is downloaded).
	FastStart bool
}

// ProbeBinary is the ffprobe executable used by Probe.
var ProbeBinary = "ffprobe"

// FFmpegBinary is the ffmpeg executable used by FrameAt.
var FFmpegBinary = "ffmpeg"

type probeJSON struct {
	Streams []struct {
		CodecType    string `json:"codec_type"`
		CodecName    string `json:"codec_name"`
		Width        int    `json:"width"`
		Height       int    `json:"height"`
		PixFmt       string `json:"pix_fmt"`
		AvgFrameRate string `json:"avg_frame_rate"`
		RFrameRate   string `json:"r_frame_rate"`
		NbFrames     string `json:"nb_frames"`
		Duration     string `json:"duration"`
		SampleRate   string `json:"sample_rate"`
		Channels     int    `json:"channels"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

// Probe reads a media file's streams with ffprobe's JSON output.
func Probe(ctx context.Context, path string) (*ProbeInfo, error) {
	cmd := exec.CommandContext(ctx, ProbeBinary, "-v", "error", "-print_format", "json",
		"-show_format", "-show_streams", path)
	ownProcessGroup(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ffprobe %s: %v: %s", filepath.Base(path), err, strings.TrimSpace(errb.String()))
	}
	info, err := parseProbe(out.Bytes())
	if err != nil {
		return nil, err
	}
	info.FastStart = moovFirst(path)
	return info, nil
}

func parseProbe(b []byte) (*ProbeInfo, error) {
	var p probeJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("ffprobe: bad JSON: %w", err)
	}
	info := &ProbeInfo{Duration: parseFloat(p.Format.Duration)}
	seenV := false
	for _, s := range p.Streams {
		switch s.CodecType {
		case "video":
			if seenV {
				continue
			}
			seenV = true
			info.Width, info.Height = s.Width, s.Height
			info.VideoCodec, info.PixFmt = s.CodecName, s.PixFmt
			info.FPS = parseRate(s.AvgFrameRate)
			if info.FPS == 0 {
				info.FPS = parseRate(s.RFrameRate)
			}
			info.Frames, _ = strconv.Atoi(s.NbFrames)
			info.VideoDuration = parseFloat(s.Duration)
		case "audio":
			if info.HasAudio {
				continue
			}
			info.HasAudio = true
			info.AudioCodec = s.CodecName
			info.AudioDuration = parseFloat(s.Duration)
			info.SampleRate, _ = strconv.Atoi(s.SampleRate)
			info.Channels = s.Channels
		}
	}
	return info, nil
}

func parseFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// parseRate parses "30000/1001" or "24".
func parseRate(s string) float64 {
	n, d, ok := strings.Cut(s, "/")
	if !ok {
		return parseFloat(s)
	}
	a, b := parseFloat(n), parseFloat(d)
	if b == 0 {
		return 0
	}
	return a / b
}

// FrameAt decodes the frame shown at time t (seconds) as RGBA.
func FrameAt(ctx context.Context, path string, t float64) (*image.RGBA, error) {
	info, err := Probe(ctx, path)
	if err != nil {
		return nil, err
	}
	if info.Width == 0 {
		return nil, fmt.Errorf("ffmpeg: %s has no video stream", filepath.Base(path))
	}
	cmd := exec.CommandContext(ctx, FFmpegBinary, "-hide_banner", "-nostdin", "-loglevel", "error",
		"-i", path, "-ss", strconv.FormatFloat(t, 'f', 4, 64), "-frames:v", "1",
		"-f", "rawvideo", "-pix_fmt", "rgba", "pipe:1")
	ownProcessGroup(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ffmpeg frame at %.3fs of %s: %v: %s", t, filepath.Base(path), err, strings.TrimSpace(errb.String()))
	}
	n := info.Width * info.Height * 4
	if out.Len() < n {
		return nil, fmt.Errorf("ffmpeg: no frame at %.3fs of %s (duration %.3fs)", t, filepath.Base(path), info.Duration)
	}
	img := image.NewRGBA(image.Rect(0, 0, info.Width, info.Height))
	copy(img.Pix, out.Bytes()[:n])
	return img, nil
}

// moovFirst reports whether an MP4's top-level moov box comes before mdat.
func moovFirst(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var off int64
	hdr := make([]byte, 16)
	for i := 0; i < 64; i++ {
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			return false
		}
		size := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:8])
		switch typ {
		case "moov":
			return true
		case "mdat":
			return false
		}
		if size == 1 {
			if _, err := f.ReadAt(hdr[8:16], off+8); err != nil {
				return false
			}
			size = int64(binary.BigEndian.Uint64(hdr[8:16]))
		}
		if size < 8 {
			return false
		}
		off += size
	}
	return false
}

// Check reports whether the ffmpeg and ffprobe binaries can be run (by
// FFmpegBinary and ProbeBinary), naming the one that is missing.
func Check() error {
	for _, b := range []string{FFmpegBinary, ProbeBinary} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("ffmpeg: %s not found (make setup installs ffmpeg): %w", b, err)
		}
	}
	return nil
}
