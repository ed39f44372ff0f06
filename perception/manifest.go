package perception

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"fashiond/inference"
)

//go:embed manifests/*.json
var manifestFS embed.FS

// TensorSpec describes one input or output tensor of a graph.
type TensorSpec struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`  // "float32"
	Shape  []int64 `json:"shape"`  // -1 marks a dimension the caller chooses
	Layout string  `json:"layout"` // NHWC, NCHW, NC, NAC (batch, anchors, channels)
}

// Preprocess says how an image becomes the input tensor: value =
// ((pixel*Scale) - Mean[c]) / Std[c] for pixels 0..255 in ColorOrder.
type Preprocess struct {
	ColorOrder  string    `json:"color_order"` // RGB or BGR
	Scale       float64   `json:"scale"`
	Mean        []float64 `json:"mean,omitempty"`
	Std         []float64 `json:"std,omitempty"`
	Resize      string    `json:"resize"`                 // stretch, pad-square, pad-multiple, tile
	Width       int       `json:"width,omitempty"`        // fixed input width (stretch, pad-square)
	Height      int       `json:"height,omitempty"`       // fixed input height
	PadMultiple int       `json:"pad_multiple,omitempty"` // pad-multiple: H and W rounded up to this
	Tile        int       `json:"tile,omitempty"`         // tile: tile edge in input pixels
	TileOverlap int       `json:"tile_overlap,omitempty"` // tile: overlap between tiles
}

// Manifest is the committed description of one model (perception/manifests/NAME.json).
type Manifest struct {
	Name    string `json:"name"`
	File    string `json:"file"`   // file name inside the repository; "" for an empty optional slot
	SHA256  string `json:"sha256"` // lower-case hex of File
	Task    string `json:"task"`
	License string `json:"license"`
	Source  string `json:"source"`
	// Optional models may be absent; Require skips none of them, but
	// Verify reports an absent optional model as StateNotInstalled.
	Optional bool `json:"optional,omitempty"`
	// Generative marks a slot for a generative model an operator installs
	// (with a manifest override in DIR/manifests/); none ships here.
	Generative bool         `json:"generative,omitempty"`
	Inputs     []TensorSpec `json:"inputs,omitempty"`
	Outputs    []TensorSpec `json:"outputs,omitempty"`
	Preprocess *Preprocess  `json:"preprocess,omitempty"`
	// ScaleFactor is the output/input size ratio of super-resolution models.
	ScaleFactor int `json:"scale_factor,omitempty"`
	// MaxBatch is the largest dynamic batch (1 = no batching: session pool).
	MaxBatch int `json:"max_batch"`
	// MaxDelayMS is how long the batcher waits to fill a batch (sub-10 ms).
	MaxDelayMS int `json:"max_delay_ms"`
	// BatchNative is true when File itself accepts batch > 1.
	BatchNative bool `json:"batch_native,omitempty"`
	// Device is the preferred device: auto, cpu or cuda.
	Device string `json:"device,omitempty"`
	// BatchFile is File rewritten by scripts/rewrite_batch.py to a symbolic
	// batch dimension, with its SHA-256. Absent when the graph cannot be
	// rewritten (the runner falls back to a session pool).
	BatchFile   string `json:"batch_file,omitempty"`
	BatchSHA256 string `json:"batch_sha256,omitempty"`
	Notes       string `json:"notes,omitempty"`
	// Origin is where File comes from when there is no mirror (see
	// docs/ORIGINS.md); what it yields is checked against SHA256 like a copy.
	Origin *Origin `json:"origin,omitempty"`
}

// MaxDelay is MaxDelayMS as a duration.
func (m Manifest) MaxDelay() time.Duration { return time.Duration(m.MaxDelayMS) * time.Millisecond }

// Batchable reports whether the model can run batches larger than one,
// either natively or through its rewritten batch file.
func (m Manifest) Batchable() bool {
	return m.MaxBatch > 1 && (m.BatchNative || m.BatchFile != "")
}

// BatchOptions are the dynamic-batching limits from the manifest.
func (m Manifest) BatchOptions() inference.BatchOptions {
	return inference.BatchOptions{Name: m.Name, MaxBatch: m.MaxBatch, MaxDelay: m.MaxDelay()}
}

// InputNames are the input tensor names in Run order.
func (m Manifest) InputNames() []string {
	out := make([]string, len(m.Inputs))
	for i, t := range m.Inputs {
		out[i] = t.Name
	}
	return out
}

// OutputNames are the output tensor names in result order.
func (m Manifest) OutputNames() []string {
	out := make([]string, len(m.Outputs))
	for i, t := range m.Outputs {
		out[i] = t.Name
	}
	return out
}

var (
	hexSHA256  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	modelName  = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	devices    = map[string]bool{"": true, "auto": true, "cpu": true, "cuda": true}
	fileSuffix = ".onnx"
)

// plainFile accepts a bare *.onnx file name: no directories, no
// backslashes, nothing hidden.
func plainFile(f string) bool {
	return path.Base(f) == f && !strings.ContainsAny(f, `\`+"\x00") && !strings.HasPrefix(f, ".") &&
		strings.HasSuffix(f, fileSuffix) && len(f) > len(fileSuffix)
}

// Validate checks a manifest for the fields every consumer relies on.
func (m Manifest) Validate() error {
	if !modelName.MatchString(m.Name) {
		return fmt.Errorf("manifest: bad model name %q", m.Name)
	}
	if m.Task == "" {
		return fmt.Errorf("manifest %s: no task", m.Name)
	}
	if !devices[m.Device] {
		return fmt.Errorf("manifest %s: device %q is not auto, cpu or cuda", m.Name, m.Device)
	}
	if m.MaxBatch < 0 || m.MaxDelayMS < 0 || m.MaxDelayMS >= 10 {
		return fmt.Errorf("manifest %s: max_batch %d / max_delay_ms %d out of range (delay must be under 10 ms)", m.Name, m.MaxBatch, m.MaxDelayMS)
	}
	if m.File == "" {
		if !m.Optional {
			return fmt.Errorf("manifest %s: no file (only optional slots may leave it empty)", m.Name)
		}
		return nil
	}
	if !plainFile(m.File) {
		return fmt.Errorf("manifest %s: file %q must be a plain *.onnx name", m.Name, m.File)
	}
	if !hexSHA256.MatchString(m.SHA256) {
		return fmt.Errorf("manifest %s: sha256 %q is not 64 lower-case hex digits", m.Name, m.SHA256)
	}
	if len(m.Inputs) == 0 || len(m.Outputs) == 0 {
		return fmt.Errorf("manifest %s: inputs and outputs must be listed", m.Name)
	}
	for _, t := range append(append([]TensorSpec(nil), m.Inputs...), m.Outputs...) {
		if t.Name == "" || t.DType != "float32" || len(t.Shape) == 0 {
			return fmt.Errorf("manifest %s: tensor %+v needs a name, dtype float32 and a shape", m.Name, t)
		}
	}
	if (m.BatchFile == "") != (m.BatchSHA256 == "") {
		return fmt.Errorf("manifest %s: batch_file and batch_sha256 go together", m.Name)
	}
	if m.Origin != nil {
		if err := m.Origin.Validate(); err != nil {
			return fmt.Errorf("manifest %s: %w", m.Name, err)
		}
	}
	if m.BatchFile != "" {
		if !plainFile(m.BatchFile) || m.BatchFile == m.File {
			return fmt.Errorf("manifest %s: batch_file %q must be a plain *.onnx name other than file", m.Name, m.BatchFile)
		}
		if !hexSHA256.MatchString(m.BatchSHA256) {
			return fmt.Errorf("manifest %s: batch_sha256 %q is not 64 lower-case hex digits", m.Name, m.BatchSHA256)
		}
	}
	return nil
}

// ParseManifest decodes and validates one manifest; unknown fields are errors.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("manifest: %w", err)
	}
	if m.Device == "" {
		m.Device = "auto"
	}
	if m.MaxBatch == 0 {
		m.MaxBatch = 1
	}
	return m, m.Validate()
}

// LoadManifests returns the committed manifests (embedded from
// perception/manifests), sorted by name.
func LoadManifests() ([]Manifest, error) {
	return loadManifestsFS(manifestFS, "manifests")
}

func loadManifestsFS(fsys fs.FS, dir string) ([]Manifest, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	var out []Manifest
	seen := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		m, err := ParseManifest(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if m.Name+".json" != e.Name() {
			return nil, fmt.Errorf("%s: manifest names model %q; the file must be called %s.json", e.Name(), m.Name, m.Name)
		}
		if prev, dup := seen[m.Name]; dup {
			return nil, fmt.Errorf("manifests: model %s declared twice (%s, %s)", m.Name, prev, e.Name())
		}
		seen[m.Name] = e.Name()
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
