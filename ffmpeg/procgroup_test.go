package ffmpeg

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestEncoderOwnProcessGroup: ffmpeg runs in a process group of its own, so
// a terminal's Ctrl-C (sent to fashiond's group) does not break a running
// encode (issue 12: "ffmpeg: writing frame 20: broken pipe").
func TestEncoderOwnProcessGroup(t *testing.T) {
	needFFmpeg(t)
	const w, h = 32, 32
	o := Options{Width: w, Height: h, FPS: 24, Duration: 500 * time.Millisecond, Out: filepath.Join(t.TempDir(), "c.mp4")}
	enc, err := NewEncoder(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	pid := enc.cmd.Process.Pid
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if pgid != pid || pgid == syscall.Getpgrp() {
		t.Errorf("ffmpeg pid %d is in process group %d (ours %d), want a group of its own", pid, pgid, syscall.Getpgrp())
	}
	for i := range enc.FramesNeeded() {
		if err := enc.WriteFrame(gradientFrame(w, h, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}
