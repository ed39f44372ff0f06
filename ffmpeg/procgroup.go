package ffmpeg

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, so that the
// terminal's Ctrl-C (SIGINT to the foreground process group) reaches
// fashiond only: a running encode then finishes within the shutdown grace
// period instead of failing with "broken pipe". The process still ends with
// its context (exec.CommandContext) or when its stdin closes.
func ownProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
