package diffusion

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadFolderConfig feeds arbitrary bytes as each config file: reading
// never panics, and a folder it accepts has a positive scaling factor, a
// power-of-two VAE factor and positive sizes.
func FuzzReadFolderConfig(f *testing.F) {
	f.Add([]byte(`{"_class_name": "StableDiffusionPipeline"}`), []byte(`{"hidden_size": 768}`), []byte(`{"in_channels": 4, "sample_size": 64}`), []byte(`{"scaling_factor": 0.18215, "block_out_channels": [128, 256, 512, 512]}`))
	f.Add([]byte(`null`), []byte(`[]`), []byte(`{"time_cond_proj_dim": null}`), []byte(`{"scaling_factor": -1}`))
	f.Add([]byte(`{`), []byte(`{"hidden_size": "x"}`), []byte(`{"in_channels": 1e999}`), []byte(`{"block_out_channels": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70]}`))
	f.Fuzz(func(t *testing.T, index, text, unet, vae []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{
			fileIndex: index, filepath.Join(dirText, fileConfig): text,
			filepath.Join(dirUNet, fileConfig): unet, filepath.Join(dirVAEDecoder, fileConfig): vae,
		} {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fc, err := readFolderConfig(dir)
		if err != nil {
			return
		}
		if fc.VAE.ScalingFactor <= 0 || fc.VAE.scaleFactor() < 1 || fc.UNet.SampleSize <= 0 || fc.Text.MaxPositionEmbeddings <= 0 {
			t.Fatalf("accepted %+v", fc)
		}
	})
}
