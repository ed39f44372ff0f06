package jobs

import (
	"log/slog"
	"strings"
)

// asynqRedundant are the prefixes of asynq warnings that repeat what the
// worker logs itself: every failed job is logged once as "job failed" with
// its reason, so asynq's "Retry exhausted" (a user-error job is never
// retried) would be a second, alarming line per bad request.
var asynqRedundant = []string{"Retry exhausted for task"}

// asynqWarnLevel is the level of one asynq warning: Debug for a redundant
// one, Warn otherwise.
func asynqWarnLevel(msg string) slog.Level {
	for _, p := range asynqRedundant {
		if strings.HasPrefix(msg, p) {
			return slog.LevelDebug
		}
	}
	return slog.LevelWarn
}
