package modelcreate

import (
	"context"
	"fmt"
	"hash/fnv"
	"image"
	"strings"

	"fashiond/pipelines/body"
	"fashiond/pipelines/generative"
)

// The text-to-image stage of "generate": with an installed text-to-image
// model the model photo is generated from the request's words instead of
// chosen from the preset library; everything after (body type, clothing,
// pose, face, style, the studio record) is the same as on a preset. A
// generated photo without exactly one person with a face is not used: the
// job falls back to the presets and says why.
const genWidth, genHeight = 768, 1024 // 3:4

// WithTextToImage makes "generate" create the model photo with an
// installed text-to-image model (nil keeps the preset library).
func (pl *Pipeline) WithTextToImage(g generative.Generator) *Pipeline {
	pl.t2i = g
	return pl
}

// GenerativeModels implements pipelines.GenerativeUser.
func (pl *Pipeline) GenerativeModels() []string {
	if pl.t2i == nil {
		return nil
	}
	return []string{pl.t2i.Model()}
}

// genPhoto is one generated model photo.
type genPhoto struct {
	img  image.Image
	info generative.Info
}

// genPrompt describes the model photo from the request's words.
func genPrompt(in Inputs) string {
	var who []string
	for _, w := range []string{in.Gender, in.BodyType, in.Prompt} {
		if w = strings.TrimSpace(w); w != "" {
			who = append(who, w)
		}
	}
	if len(who) == 0 {
		who = []string{"a fashion model"}
	}
	p := "a full-body fashion photo of one person: " + strings.Join(who, ", ")
	if c := strings.TrimSpace(in.Clothing); c != "" {
		p += "; wearing " + c
	}
	pose := strings.TrimSpace(in.Pose)
	if pose == "" {
		pose = "standing, facing the camera"
	}
	return p + "; " + pose + "; plain light studio background, soft natural light, sharp focus"
}

// generatePhotos makes n model photos, or says why they cannot be used.
func (pl *Pipeline) generatePhotos(ctx context.Context, in Inputs, n int, seed uint64) ([]genPhoto, error) {
	out := make([]genPhoto, n)
	for i := range n {
		img, info, err := pl.t2i.Generate(ctx, genWidth, genHeight, generative.Prompt{Text: genPrompt(in), Negative: generative.PersonNegative, Seed: seed + uint64(i)})
		if err != nil {
			return nil, err
		}
		if err := body.OnePerson(ctx, pl.p, img); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("the installed text-to-image model %q made no usable model photo (sample %d: %v)", info.Model, i+1, err)
		}
		out[i] = genPhoto{img: img, info: info}
	}
	return out, nil
}

// seedOf derives a stable seed from the job id (FNV-1a).
func seedOf(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
