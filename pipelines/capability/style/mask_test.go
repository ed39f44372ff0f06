package style

import (
	"context"
	"image"
	"sync"
	"testing"

	"fashiond/internal/pipelinetest"
)

var (
	maskMu    sync.Mutex
	maskCache = map[image.Image]*image.Gray{}
)

// personMask runs the real models on img (SubjectMask, cached).
func personMask(t *testing.T, img image.Image) *image.Gray {
	t.Helper()
	maskMu.Lock()
	defer maskMu.Unlock()
	if m, ok := maskCache[img]; ok {
		return m
	}
	m, err := SubjectMask(context.Background(), pipelinetest.Perception(t), img)
	if err != nil {
		t.Fatal(err)
	}
	maskCache[img] = m
	return m
}
