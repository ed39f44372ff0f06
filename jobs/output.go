package jobs

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"strings"

	"fashiond/pipelines"
)

// JPEGQuality is the quality of JPEG outputs.
const JPEGQuality = 92

// EncodeOutput encodes one pipeline output: an image as PNG when it has
// transparency or Format is "png", else as JPEG (quality 92, or when Format
// is "jpeg"); a video must be an MP4 file. It returns the bytes, the file
// extension and the content type.
func EncodeOutput(o pipelines.Output) (data []byte, ext, contentType string, err error) {
	switch {
	case o.Image != nil && o.Video == nil:
		format := o.Format
		switch format {
		case "":
			format = "jpeg"
			if hasAlpha(o.Image) {
				format = "png"
			}
		case "jpg":
			format = "jpeg"
		case "jpeg", "png":
		default:
			return nil, "", "", fmt.Errorf("unknown output format %q (jpeg or png)", o.Format)
		}
		b := o.Image.Bounds()
		if b.Empty() {
			return nil, "", "", fmt.Errorf("empty output image")
		}
		var buf bytes.Buffer
		if format == "png" {
			if err := png.Encode(&buf, o.Image); err != nil {
				return nil, "", "", err
			}
			return buf.Bytes(), "png", "image/png", nil
		}
		img := o.Image
		if hasAlpha(img) { // forced JPEG: flatten onto white, not black
			flat := image.NewRGBA(b)
			draw.Draw(flat, b, image.NewUniform(color.White), image.Point{}, draw.Src)
			draw.Draw(flat, b, img, b.Min, draw.Over)
			img = flat
		}
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: JPEGQuality}); err != nil {
			return nil, "", "", err
		}
		return buf.Bytes(), "jpg", "image/jpeg", nil
	case o.Video != nil && o.Image == nil:
		if len(o.Video) < 12 || string(o.Video[4:8]) != "ftyp" {
			return nil, "", "", fmt.Errorf("the video output is not an MP4 file")
		}
		return o.Video, "mp4", "video/mp4", nil
	}
	return nil, "", "", fmt.Errorf("an output must hold exactly one of an image and a video")
}

// hasAlpha reports whether any pixel is not fully opaque.
func hasAlpha(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return !o.Opaque()
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a != 0xffff {
				return true
			}
		}
	}
	return false
}

// OutputKey is the blob key of output i of a job: deterministic, so a
// re-run after a crash overwrites instead of adding files.
func OutputKey(jobID string, i int, ext string) string {
	return fmt.Sprintf("%s/%d.%s", jobID, i, ext)
}

// blobRef starts an output or saved-model image as a record keeps it: the
// blob key after it. Its URL is made when the record is read (see blobURL),
// so a presigned URL (FASHIOND_S3_PRESIGN) is signed at every read and is
// valid for the presign duration from then, however old the record is.
const blobRef = "blob:"

// blobURL is the URL of a stored reference: the store's URL of its key
// (signed now when the store presigns); any other value (a data URI, or
// the full URL a record written before blob references holds) as it is.
func (s *Service) blobURL(v string) string {
	if key, ok := strings.CutPrefix(v, blobRef); ok {
		return s.store.URL(key)
	}
	return v
}

// storeOutputs encodes and stores a result in output order and returns the
// outputs as the record keeps them (blob references, or data URIs for
// outputs that ask for one) and their info.
func (s *Service) storeOutputs(ctx context.Context, jobID string, res *pipelines.Result) ([]string, []OutputInfo, error) {
	urls := make([]string, 0, len(res.Outputs))
	info := make([]OutputInfo, 0, len(res.Outputs))
	for i, o := range res.Outputs {
		data, ext, ct, err := EncodeOutput(o)
		if err != nil {
			return nil, nil, &pipelines.Error{Msg: fmt.Sprintf("internal error: output %d: %v", i, err), Err: err}
		}
		if o.DataURI {
			urls = append(urls, "data:"+ct+";base64,"+base64.StdEncoding.EncodeToString(data))
		} else {
			key := OutputKey(jobID, i, ext)
			if err := s.store.Put(ctx, key, ct, bytes.NewReader(data)); err != nil {
				return nil, nil, &pipelines.Error{Msg: fmt.Sprintf("could not store output %d", i), Transient: true, Err: err}
			}
			urls = append(urls, blobRef+key)
		}
		path := o.Path
		if path == "" {
			path = "reference"
		}
		info = append(info, OutputInfo{Path: path, Method: o.Method, Notes: o.Notes, Checks: o.Checks})
	}
	return urls, info, nil
}
