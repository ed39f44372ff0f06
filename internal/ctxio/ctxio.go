// Package ctxio makes long copies and hashes stop when their context ends.
package ctxio

import (
	"context"
	"io"
)

// Reader returns r as a reader that fails with ctx's error, before reading
// on, once ctx has ended: io.Copy over it stops at the next buffer.
func Reader(ctx context.Context, r io.Reader) io.Reader { return reader{ctx, r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
