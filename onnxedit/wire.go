package onnxedit

import (
	"errors"
	"fmt"
	"io"
	"iter"

	"google.golang.org/protobuf/encoding/protowire"
)

const (
	// readWindow is how much of the file one read fetches, so that the many
	// small reads of field headers do not each cost a system call.
	readWindow = 64 << 10
	// maxString bounds a name or type string read into memory; ONNX names
	// are short, and a longer one means a damaged file.
	maxString = 1 << 20
	// maxDepth bounds nesting (subgraphs, groups) so that a hostile file
	// cannot exhaust the stack.
	maxDepth = 64
	// maxVarint is the longest encoding of a varint (and of a tag).
	maxVarint = 10
)

// errMalformed is wrapped by every error about the protobuf encoding itself.
var errMalformed = errors.New("malformed protobuf")

// span is a byte range [off, end) of the model file.
type span struct{ off, end int64 }

func (s span) len() int64 { return s.end - s.off }

// field is one protobuf field found in a span. whole covers tag and value;
// val covers the payload of a length-delimited field or the encoded value of
// the others. v holds the value of a varint field.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	whole span
	val   span
	v     uint64
}

// source reads a model file by offset, through a small read window. The file
// is never loaded whole: big payloads (weights) are only ever skipped here
// and copied by range when a model is written.
type source struct {
	ra     io.ReaderAt
	size   int64
	buf    []byte
	bufOff int64
}

func newSource(ra io.ReaderAt, size int64) *source {
	return &source{ra: ra, size: size}
}

// all is the span of the whole file.
func (s *source) all() span { return span{0, s.size} }

// peek returns up to n bytes at off, fewer only where limit comes first. The
// slice is valid until the next call.
func (s *source) peek(off, limit int64, n int) ([]byte, error) {
	want := min(int64(n), limit-off)
	if want <= 0 {
		return nil, nil
	}
	if off >= s.bufOff && off+want <= s.bufOff+int64(len(s.buf)) {
		return s.buf[off-s.bufOff : off-s.bufOff+want], nil
	}
	m := min(int64(readWindow), s.size-off)
	if m < want {
		return nil, fmt.Errorf("%w: data runs past the end of the file", errMalformed)
	}
	if cap(s.buf) < readWindow {
		s.buf = make([]byte, readWindow)
	}
	s.buf = s.buf[:m]
	s.bufOff = off
	if k, err := s.ra.ReadAt(s.buf, off); k < len(s.buf) {
		s.buf = s.buf[:0]
		return nil, fmt.Errorf("read at %d: %w", off, err)
	}
	return s.buf[:want], nil
}

// read returns a copy of the bytes in sp.
func (s *source) read(sp span) ([]byte, error) {
	if sp.len() <= readWindow {
		b, err := s.peek(sp.off, sp.end, int(sp.len()))
		return append([]byte(nil), b...), err
	}
	b := make([]byte, sp.len())
	if k, err := s.ra.ReadAt(b, sp.off); k < len(b) {
		return nil, fmt.Errorf("read at %d: %w", sp.off, err)
	}
	return b, nil
}

// str reads the payload of a length-delimited field as a string.
func (s *source) str(f field) (string, error) {
	if f.typ != protowire.BytesType {
		return "", fmt.Errorf("%w: field %d has wire type %d, want bytes", errMalformed, f.num, f.typ)
	}
	if f.val.len() > maxString {
		return "", fmt.Errorf("%w: string field %d is %d bytes long", errMalformed, f.num, f.val.len())
	}
	b, err := s.read(f.val)
	return string(b), err
}

// varint decodes the varint at off, which must end before end.
func (s *source) varint(off, end int64) (uint64, int64, error) {
	b, err := s.peek(off, end, maxVarint)
	if err != nil {
		return 0, 0, err
	}
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, fmt.Errorf("%w: bad varint at %d: %v", errMalformed, off, protowire.ParseError(n))
	}
	return v, int64(n), nil
}

// fields iterates over the fields of the message encoded in sp. After an
// error it yields that error once and stops.
func (s *source) fields(sp span) iter.Seq2[field, error] {
	return func(yield func(field, error) bool) {
		for off := sp.off; off < sp.end; {
			f, err := s.field(off, sp.end, 0)
			if !yield(f, err) || err != nil {
				return
			}
			off = f.whole.end
		}
	}
}

// field decodes the field that starts at off and ends before end.
func (s *source) field(off, end int64, depth int) (field, error) {
	b, err := s.peek(off, end, maxVarint)
	if err != nil {
		return field{}, err
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, fmt.Errorf("%w: bad tag at %d: %v", errMalformed, off, protowire.ParseError(n))
	}
	f := field{num: num, typ: typ, whole: span{off: off}, val: span{off: off + int64(n)}}
	switch typ {
	case protowire.VarintType:
		v, k, err := s.varint(f.val.off, end)
		if err != nil {
			return field{}, err
		}
		f.v, f.val.end = v, f.val.off+k
	case protowire.Fixed32Type:
		f.val.end = f.val.off + 4
	case protowire.Fixed64Type:
		f.val.end = f.val.off + 8
	case protowire.BytesType:
		l, k, err := s.varint(f.val.off, end)
		if err != nil {
			return field{}, err
		}
		f.val.off += k
		if l > uint64(end-f.val.off) {
			return field{}, fmt.Errorf("%w: field %d at %d is longer than its message", errMalformed, num, off)
		}
		f.val.end = f.val.off + int64(l)
	case protowire.StartGroupType:
		if f.val.end, err = s.skipGroup(f.val.off, end, num, depth+1); err != nil {
			return field{}, err
		}
	default:
		return field{}, fmt.Errorf("%w: field %d at %d has wire type %d", errMalformed, num, off, typ)
	}
	if f.val.end > end {
		return field{}, fmt.Errorf("%w: field %d at %d is longer than its message", errMalformed, num, off)
	}
	f.whole.end = f.val.end
	return f, nil
}

// skipGroup returns the offset just past the end-group tag that closes the
// group num whose fields start at off.
func (s *source) skipGroup(off, end int64, num protowire.Number, depth int) (int64, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: groups nested deeper than %d", errMalformed, maxDepth)
	}
	for off < end {
		b, err := s.peek(off, end, maxVarint)
		if err != nil {
			return 0, err
		}
		n, typ, k := protowire.ConsumeTag(b)
		if k >= 0 && typ == protowire.EndGroupType {
			if n != num {
				return 0, fmt.Errorf("%w: group %d closed as %d at %d", errMalformed, num, n, off)
			}
			return off + int64(k), nil
		}
		f, err := s.field(off, end, depth)
		if err != nil {
			return 0, err
		}
		off = f.whole.end
	}
	return 0, fmt.Errorf("%w: group %d is not closed", errMalformed, num)
}

// piece is a part of an output file: literal bytes, or (lit == nil) a range
// of the source file copied as it is.
type piece struct {
	lit []byte
	src span
}

// plan is an output file (or message) described as pieces, so that its
// length is known before writing and untouched bytes are copied by range.
type plan struct {
	pieces []piece
	size   int64
}

// copy appends the source range sp, merging it with a directly preceding range.
func (p *plan) copy(sp span) {
	p.size += sp.len()
	if k := len(p.pieces) - 1; k >= 0 && p.pieces[k].lit == nil && p.pieces[k].src.end == sp.off {
		p.pieces[k].src.end = sp.end
		return
	}
	p.pieces = append(p.pieces, piece{src: sp})
}

// lit appends literal bytes.
func (p *plan) lit(b []byte) {
	p.size += int64(len(b))
	p.pieces = append(p.pieces, piece{lit: b})
}

// message appends q as the length-delimited field num.
func (p *plan) message(num protowire.Number, q *plan) {
	hdr := protowire.AppendTag(nil, num, protowire.BytesType)
	p.lit(protowire.AppendVarint(hdr, uint64(q.size)))
	p.size += q.size
	p.pieces = append(p.pieces, q.pieces...)
}

// isCopyOf tells whether the plan is just the source range sp, unchanged.
func (p *plan) isCopyOf(sp span) bool {
	if sp.len() == 0 {
		return p.size == 0
	}
	return len(p.pieces) == 1 && p.pieces[0].lit == nil && p.pieces[0].src == sp
}

// write writes the plan to w, copying source ranges from s.
func (p *plan) write(w io.Writer, s *source) error {
	for _, pc := range p.pieces {
		if pc.lit != nil {
			if _, err := w.Write(pc.lit); err != nil {
				return err
			}
			continue
		}
		if _, err := io.CopyN(w, io.NewSectionReader(s.ra, pc.src.off, pc.src.len()), pc.src.len()); err != nil {
			return fmt.Errorf("copy bytes %d..%d: %w", pc.src.off, pc.src.end, err)
		}
	}
	return nil
}
