package diffusion

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
)

// The component folders of a Stable Diffusion export, as Optimum writes
// them. Each graph folder holds model.onnx (weights may sit beside it in
// external data files) and config.json.
const (
	dirScheduler  = "scheduler"
	dirTokenizer  = "tokenizer"
	dirText       = "text_encoder"
	dirUNet       = "unet"
	dirVAEEncoder = "vae_encoder"
	dirVAEDecoder = "vae_decoder"
	fileIndex     = "model_index.json"
	fileGraph     = "model.onnx"
	fileConfig    = "config.json"
	// fileAdapter is the install-time rewrite of a graph (see adapters.go);
	// when present it is loaded instead of model.onnx.
	fileAdapter = "model.fashiond.onnx"
)

// Defaults for keys a config.json may leave out (diffusers' defaults).
const (
	defaultScalingFactor = 0.18215
	defaultSampleSize    = 64
	defaultSeqLen        = 77
)

// folderConfig is what the JSON files of a folder say.
type folderConfig struct {
	PipelineClass string
	Text          textConfig
	UNet          unetConfig
	VAE           vaeConfig
	// Layout is fashiond.json's declaration (try-on folders); nil for a
	// plain Stable Diffusion export.
	Layout *Layout
}

type textConfig struct {
	HiddenSize            int `json:"hidden_size"`
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
}

type unetConfig struct {
	InChannels      int  `json:"in_channels"`
	OutChannels     int  `json:"out_channels"`
	SampleSize      int  `json:"sample_size"`
	CrossAttention  int  `json:"cross_attention_dim"`
	TimeCondProjDim *int `json:"time_cond_proj_dim"`
}

type vaeConfig struct {
	ScalingFactor    float64 `json:"scaling_factor"`
	LatentChannels   int     `json:"latent_channels"`
	BlockOutChannels []int   `json:"block_out_channels"`
}

// scaleFactor is the VAE's spatial down-sampling factor (8 for SD).
func (v vaeConfig) scaleFactor() int {
	if n := len(v.BlockOutChannels); n > 1 {
		return 1 << (n - 1)
	}
	return 8
}

// readFolderConfig reads model_index.json and the graph configs of dir. A
// folder whose fashiond.json declares a layout is not a plain export: it is
// refused here, naming the loader that reads it.
func readFolderConfig(dir string) (folderConfig, error) {
	var fc folderConfig
	if _, err := os.Stat(filepath.Join(dir, FileLayout)); err == nil {
		return fc, fmt.Errorf("%s: the folder declares a layout (a try-on model): load it with diffusion.LoadTryOn or diffusion.Open", FileLayout)
	}
	return readConfigs(dir, true)
}

// readConfigs reads model_index.json, the text encoder's config (when
// withText) and the UNet's and VAE's configs.
func readConfigs(dir string, withText bool) (folderConfig, error) {
	var fc folderConfig
	var index struct {
		Class string `json:"_class_name"`
	}
	if err := readJSON(dir, fileIndex, &index); err != nil {
		return fc, err
	}
	fc.PipelineClass = index.Class
	if withText {
		if err := readJSON(dir, filepath.Join(dirText, fileConfig), &fc.Text); err != nil {
			return fc, err
		}
	}
	if err := readJSON(dir, filepath.Join(dirUNet, fileConfig), &fc.UNet); err != nil {
		return fc, err
	}
	if err := readVAEConfig(dir, &fc.VAE); err != nil {
		return fc, err
	}
	if fc.UNet.SampleSize <= 0 {
		fc.UNet.SampleSize = defaultSampleSize
	}
	if fc.Text.MaxPositionEmbeddings <= 0 {
		fc.Text.MaxPositionEmbeddings = defaultSeqLen
	}
	return fc, nil
}

// readVAEConfig takes the decoder's config (the encoder's when the decoder
// has none); the scaling factor must be positive.
func readVAEConfig(dir string, v *vaeConfig) error {
	name := filepath.Join(dirVAEDecoder, fileConfig)
	if err := readJSON(dir, name, v); err != nil {
		return err
	}
	if v.ScalingFactor == 0 {
		v.ScalingFactor = defaultScalingFactor
	}
	if v.ScalingFactor < 0 {
		return fmt.Errorf("%s: scaling_factor %g must be positive", name, v.ScalingFactor)
	}
	if sf := v.scaleFactor(); bits.OnesCount(uint(sf)) != 1 || sf > 64 {
		return fmt.Errorf("%s: block_out_channels gives a scale factor of %d", name, sf)
	}
	return nil
}

// readJSON decodes dir/name into v; the error names the file.
func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s: missing (a Stable Diffusion ONNX export has %s)", name, name)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: invalid JSON: %w", name, err)
	}
	return nil
}

// graphFile is the graph a component loads: the install-time adapter when
// one exists, else model.onnx. The second result is the path relative to
// the folder, for messages.
func graphFile(dir, component string) (string, string, error) {
	for _, f := range []string{fileAdapter, fileGraph} {
		rel := filepath.Join(component, f)
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			return filepath.Join(dir, rel), rel, nil
		}
	}
	rel := filepath.Join(component, fileGraph)
	return "", rel, fmt.Errorf("%s: missing (every Stable Diffusion ONNX export has it)", rel)
}
