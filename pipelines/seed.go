package pipelines

import (
	"hash/fnv"
	"io"
)

// Seed derives a stable 64-bit seed from text (a job id, a prompt, an
// image reference and a view): FNV-1a over the parts joined by NUL bytes.
// Every pipeline derives its seeds here, so the same request draws the same
// pixels on every node and release; changing it changes every golden
// output.
func Seed(parts ...string) uint64 {
	h := fnv.New64a()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		io.WriteString(h, p)
	}
	return h.Sum64()
}
