package modelcreate

import (
	"context"
	"fmt"
	"image"
	"strings"

	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/generative"
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
	var out []string
	if pl.t2i != nil {
		out = append(out, pl.t2i.Model())
	}
	if pl.ref != nil && (pl.t2i == nil || pl.ref.Model() != pl.t2i.Model()) {
		out = append(out, pl.ref.Model())
	}
	return out
}

// genPhoto is one generated model photo.
type genPhoto struct {
	img  image.Image
	info generative.Info
}

// who describes the person from the request's words.
func who(in Inputs) string {
	var words []string
	for _, w := range []string{in.Gender, in.BodyType, in.Prompt} {
		if w = strings.TrimSpace(w); w != "" {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return "a fashion model"
	}
	return strings.Join(words, ", ")
}

// genPrompt describes the model photo from the request's words.
func genPrompt(in Inputs) string {
	p := "a full-body fashion photo of one person: " + who(in)
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
