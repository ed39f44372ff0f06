package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"fashiond/bench"
	"fashiond/engine"
	"fashiond/fetch"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/presets"
	"fashiond/spec"
)

// Whole-pipeline stages for `fashiond bench`: each iteration runs one job of
// a model, with the test photos as data URIs, on the bench's model suite.
// Names are pipeline/<model>@<variant>, e.g. pipeline/tryon@standard,
// pipeline/prompt-tryon@2k, pipeline/image-to-video@8s.

// benchEnv is filled after flag parsing (test data and preset directories).
var benchEnv struct {
	mu       sync.Mutex
	testdata string
	presets  string
	lib      *presets.Library
	uris     map[string]string
}

func benchURI(rel string) (string, error) {
	benchEnv.mu.Lock()
	defer benchEnv.mu.Unlock()
	if u, ok := benchEnv.uris[rel]; ok {
		return u, nil
	}
	b, err := os.ReadFile(filepath.Join(benchEnv.testdata, rel))
	if err != nil {
		return "", err
	}
	u, err := fetch.EncodeDataURI(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	if benchEnv.uris == nil {
		benchEnv.uris = map[string]string{}
	}
	benchEnv.uris[rel] = u
	return u, nil
}

func benchLibrary() (*presets.Library, error) {
	benchEnv.mu.Lock()
	defer benchEnv.mu.Unlock()
	if benchEnv.lib != nil {
		return benchEnv.lib, nil
	}
	lib, err := presets.Open(benchEnv.presets)
	if err != nil {
		return nil, fmt.Errorf("preset library %s: %w (run make setup)", benchEnv.presets, err)
	}
	benchEnv.lib = lib
	return lib, nil
}

// memStudio is the bench's in-memory studio (model-create saves results).
type memStudio struct {
	mu sync.Mutex
	m  map[string]pipelines.SavedModel
	im map[string]image.Image
}

func (s *memStudio) Save(ctx context.Context, owner string, m pipelines.SavedModel, img image.Image) (pipelines.SavedModel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	if s.m == nil {
		s.m, s.im = map[string]pipelines.SavedModel{}, map[string]image.Image{}
	}
	s.m[m.ID], s.im[m.ID] = m, img
	return m, nil
}

func (s *memStudio) Get(ctx context.Context, owner, id string) (pipelines.SavedModel, image.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.m[id]
	if !ok {
		return m, nil, pipelines.ErrNotFound
	}
	return m, s.im[id], nil
}

// stageName is pipeline/<model>@<variant>.
func stageName(model, variant string) string { return "pipeline/" + model + "@" + variant }

type pipelineStage struct {
	name   string
	model  string
	inputs func() (map[string]any, error)
}

func benchPipelineStages() []pipelineStage {
	person := "images/fashn_model.webp"
	uri := func(rel string) string { u, _ := benchURI(rel); return u }
	var st []pipelineStage
	for _, acc := range spec.Accuracies {
		st = append(st, pipelineStage{stageName(spec.ModelTryOn, acc), spec.ModelTryOn, func() (map[string]any, error) {
			return map[string]any{"personImage": uri(person), "garmentImage": uri("garments/flatlay_tee_red.png"), "accuracy": acc}, nil
		}})
	}
	for _, q := range spec.Qualities {
		st = append(st,
			pipelineStage{stageName(spec.ModelPromptTryOn, q), spec.ModelPromptTryOn, func() (map[string]any, error) {
				return map[string]any{"personImage": uri(person), "prompt": "navy and white striped t-shirt", "quality": q, "styleId": "editorial"}, nil
			}},
			pipelineStage{stageName(spec.ModelProductToModel, q), spec.ModelProductToModel, func() (map[string]any, error) {
				return map[string]any{"productImage": uri("garments/flatlay_tee_red.png"), "customPrompt": "a man, full body", "quality": q}, nil
			}},
			pipelineStage{stageName(spec.ModelModelCreate, q), spec.ModelModelCreate, func() (map[string]any, error) {
				return map[string]any{"type": spec.ModelCreateGenerate, "name": "bench", "prompt": "a man in a studio", "gender": "male", "clothing": "navy sweater", "quality": q}, nil
			}},
			pipelineStage{stageName(spec.ModelPoseControl, q), spec.ModelPoseControl, func() (map[string]any, error) {
				return map[string]any{"modelImage": uri(person), "poses": []any{map[string]any{"type": spec.PoseCustom, "text": "arms raised"}}, "quality": q}, nil
			}},
			pipelineStage{stageName(spec.ModelAngleGeneration, q), spec.ModelAngleGeneration, func() (map[string]any, error) {
				return map[string]any{"imageUrl": uri(person), "angleIds": []any{"left45"}, "quality": q}, nil
			}},
		)
	}
	for _, d := range spec.VideoDurations {
		st = append(st, pipelineStage{stageName(spec.ModelImageToVideo, fmt.Sprintf("%ds", d)), spec.ModelImageToVideo, func() (map[string]any, error) {
			return map[string]any{"imageUrl": uri(person), "duration": d}, nil
		}})
	}
	return st
}

func newBenchPipeline(model string, p perception.Perception) (pipelines.Pipeline, error) {
	lib, err := benchLibrary()
	if err != nil {
		return nil, err
	}
	reg, skipped := engine.Registry(p, lib, engine.Generative{})
	if pl, ok := reg.Get(model); ok {
		return pl, nil
	}
	return nil, fmt.Errorf("bench: %s cannot run here: %s", model, skipped[model])
}

func init() {
	loader := fetch.NewLoader(fetch.DefaultPolicy())
	studio := &memStudio{}
	for _, s := range benchPipelineStages() {
		bench.RegisterStage(s.name, func(ctx context.Context) error {
			suite := bench.SuiteFrom(ctx)
			if suite == nil {
				return errors.New("bench: no model suite")
			}
			p, err := newBenchPipeline(s.model, suite)
			if err != nil {
				return err
			}
			in, err := s.inputs()
			if err != nil {
				return err
			}
			raw, err := json.Marshal(in)
			if err != nil {
				return err
			}
			// The API's defaults, as a job through POST /v1/run gets them.
			typed, err := spec.DecodeInputs(s.model, raw)
			if err != nil {
				return err
			}
			res, err := p.Run(ctx, &pipelines.Request{
				JobID: uuid.NewString(), Model: s.model, Owner: "bench", Inputs: typed,
				Images: loader, Progress: func(string, float64, string) {}, Studio: studio,
			})
			if err != nil {
				return err
			}
			if len(res.Outputs) == 0 {
				return fmt.Errorf("%s returned no output", s.model)
			}
			return nil
		})
	}
}
