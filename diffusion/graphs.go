package diffusion

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"fashiond/inference"
)

// Graph input and output names, as Optimum and the legacy diffusers
// script name them.
const (
	inInputIDs      = "input_ids"
	outHidden       = "last_hidden_state"
	inSample        = "sample"
	inTimestep      = "timestep"
	inHiddenStates  = "encoder_hidden_states"
	inTimestepCond  = "timestep_cond"
	outLatentParams = "latent_parameters"
	outLatentSample = "latent_sample"
	inLatentSample  = "latent_sample"
	outSample       = "sample"
	latentChannels  = 4
	inpaintChannels = 9
)

// graph is one loaded component: its session and the inputs and outputs
// it declares, in the session's order.
type graph struct {
	rel  string // path relative to the folder, for messages
	sess *inference.Session
	in   []inference.IOInfo
	out  []inference.IOInfo
}

// loadGraph inspects and loads one component. pick chooses the inputs and
// outputs the engine uses from what the graph declares, or says why the
// graph does not fit.
func loadGraph(ctx context.Context, rt *inference.Runtime, dir, component, device string,
	pick func(rel string, in, out []inference.IOInfo) ([]inference.IOInfo, []inference.IOInfo, error)) (*graph, error) {
	path, rel, err := graphFile(dir, component)
	if err != nil {
		return nil, err
	}
	ins, outs, err := rt.Inspect(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	useIn, useOut, err := pick(rel, ins, outs)
	if err != nil {
		return nil, err
	}
	sess, err := rt.NewSession(ctx, inference.SessionSpec{
		Name: rel, Path: path, Inputs: names(useIn), Outputs: names(useOut), Device: device,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return &graph{rel: rel, sess: sess, in: useIn, out: useOut}, nil
}

// Close releases the session. Nil-safe and idempotent.
func (g *graph) Close() error {
	if g == nil {
		return nil
	}
	return g.sess.Close()
}

// run executes the graph; outShapes pre-allocate every output (needed for
// float16 outputs, harmless for the others).
func (g *graph) run(ctx context.Context, in []inference.Value, outShapes [][]int64) ([]inference.Value, error) {
	specs := make([]inference.OutputSpec, len(g.out))
	for i, o := range g.out {
		specs[i] = inference.OutputSpec{DType: o.DType, Shape: outShapes[i]}
	}
	return g.sess.RunValues(ctx, in, specs)
}

func names(list []inference.IOInfo) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = v.Name
	}
	return out
}

func find(list []inference.IOInfo, name string) (inference.IOInfo, bool) {
	i := slices.IndexFunc(list, func(v inference.IOInfo) bool { return v.Name == name })
	if i < 0 {
		return inference.IOInfo{}, false
	}
	return list[i], true
}

// describe is "name (type, rank r)" for messages.
func describe(v inference.IOInfo) string {
	return fmt.Sprintf("%s (%s, shape %v)", v.Name, v.Type, v.Dims)
}

// requireIO finds a tensor and checks its rank and element types.
func requireIO(rel, kind string, list []inference.IOInfo, name string, ranks []int, types ...inference.DType) (inference.IOInfo, error) {
	v, ok := find(list, name)
	if !ok {
		return v, fmt.Errorf("%s: no %s %q (the graph has %s)", rel, kind, name, strings.Join(namesOf(list), ", "))
	}
	if !slices.Contains(ranks, v.Rank()) {
		return v, fmt.Errorf("%s: %s %s has rank %d, expected %v", rel, kind, describe(v), v.Rank(), ranks)
	}
	if !slices.Contains(types, v.DType) {
		return v, fmt.Errorf("%s: %s %s has element type %s, expected one of %v", rel, kind, describe(v), v.Type, types)
	}
	return v, nil
}

func namesOf(list []inference.IOInfo) []string {
	if len(list) == 0 {
		return []string{"none"}
	}
	return names(list)
}

// unknownInputs refuses inputs the engine would not feed.
func unknownInputs(rel string, ins []inference.IOInfo, known ...string) error {
	for _, v := range ins {
		if !slices.Contains(known, v.Name) {
			return fmt.Errorf("%s: unknown input %s; the engine feeds %s (SDXL-style text_embeds/time_ids are not supported)",
				rel, describe(v), strings.Join(known, ", "))
		}
	}
	return nil
}

var floatTypes = []inference.DType{inference.Float32, inference.Float16}

// pickText: input_ids int32/int64 [B,L] -> last_hidden_state [B,L,D].
func pickText(rel string, ins, outs []inference.IOInfo) ([]inference.IOInfo, []inference.IOInfo, error) {
	ids, err := requireIO(rel, "input", ins, inInputIDs, []int{2}, inference.Int64, inference.Int32)
	if err != nil {
		return nil, nil, err
	}
	if err := unknownInputs(rel, ins, inInputIDs); err != nil {
		return nil, nil, err
	}
	hid, err := requireIO(rel, "output", outs, outHidden, []int{3}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	return []inference.IOInfo{ids}, []inference.IOInfo{hid}, nil
}

// pickUNet: sample, timestep, encoder_hidden_states[, timestep_cond] ->
// the first output (out_sample).
func pickUNet(rel string, ins, outs []inference.IOInfo) ([]inference.IOInfo, []inference.IOInfo, error) {
	sample, err := requireIO(rel, "input", ins, inSample, []int{4}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	ts, err := requireIO(rel, "input", ins, inTimestep, []int{0, 1},
		inference.Float32, inference.Float16, inference.Int64, inference.Int32)
	if err != nil {
		return nil, nil, err
	}
	hs, err := requireIO(rel, "input", ins, inHiddenStates, []int{3}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	use := []inference.IOInfo{sample, ts, hs}
	if _, ok := find(ins, inTimestepCond); ok {
		tc, err := requireIO(rel, "input", ins, inTimestepCond, []int{2}, floatTypes...)
		if err != nil {
			return nil, nil, err
		}
		use = append(use, tc)
	}
	if err := unknownInputs(rel, ins, inSample, inTimestep, inHiddenStates, inTimestepCond); err != nil {
		return nil, nil, err
	}
	if len(outs) == 0 {
		return nil, nil, fmt.Errorf("%s: the graph has no output", rel)
	}
	out, err := requireIO(rel, "output", outs, outs[0].Name, []int{4}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	return use, []inference.IOInfo{out}, nil
}

// pickVAEEncoder: sample [B,3,H,W] -> latent_parameters [B,8,h,w]
// (mean and log-variance) or latent_sample [B,4,h,w].
func pickVAEEncoder(rel string, ins, outs []inference.IOInfo) ([]inference.IOInfo, []inference.IOInfo, error) {
	in, err := requireIO(rel, "input", ins, inSample, []int{4}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	if err := unknownInputs(rel, ins, inSample); err != nil {
		return nil, nil, err
	}
	name := outLatentParams
	if _, ok := find(outs, name); !ok {
		name = outLatentSample
	}
	if _, ok := find(outs, name); !ok {
		return nil, nil, fmt.Errorf("%s: no output %q or %q (the graph has %s)", rel, outLatentParams, outLatentSample, strings.Join(namesOf(outs), ", "))
	}
	out, err := requireIO(rel, "output", outs, name, []int{4}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	want := 2 * latentChannels
	if name == outLatentSample {
		want = latentChannels
	}
	if c := out.Dims[1]; c > 0 && c != int64(want) {
		return nil, nil, fmt.Errorf("%s: output %s has %d channels, expected %d", rel, describe(out), c, want)
	}
	return []inference.IOInfo{in}, []inference.IOInfo{out}, nil
}

// pickVAEDecoder: latent_sample [B,4,h,w] -> sample [B,3,H,W].
func pickVAEDecoder(rel string, ins, outs []inference.IOInfo) ([]inference.IOInfo, []inference.IOInfo, error) {
	in, err := requireIO(rel, "input", ins, inLatentSample, []int{4}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	if err := unknownInputs(rel, ins, inLatentSample); err != nil {
		return nil, nil, err
	}
	if c := in.Dims[1]; c > 0 && c != latentChannels {
		return nil, nil, fmt.Errorf("%s: input %s has %d channels, expected %d", rel, describe(in), c, latentChannels)
	}
	out, err := requireIO(rel, "output", outs, outSample, []int{4}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	return []inference.IOInfo{in}, []inference.IOInfo{out}, nil
}
