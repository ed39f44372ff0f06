package perception

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"time"

	"fashiond/inference"
)

// DWPoseRecord is what InstallDWPose wrote: each file's SHA-256 as
// installed. fashiond cannot download the files (no network here), so the
// record pins the operator's copy; docs/GENERATIVE.md says where they are
// published.
type DWPoseRecord struct {
	Source    string            `json:"source"`
	Installed time.Time         `json:"installed"`
	Files     map[string]string `json:"files"`
}

// HasDWPose says whether dir holds both DWPose files (so that `fashiond
// models install DIR` installs them).
func HasDWPose(dir string) bool {
	for _, f := range []string{FileYOLOX, FileDWPose} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// InstallDWPose copies src's yolox_l.onnx and dw-ll_ucoco_384.onnx into
// MODELS_DIR/dwpose/, checks their tensors, runs both on a blank image and
// records their SHA-256.
func InstallDWPose(ctx context.Context, rt *inference.Runtime, src, modelsDir string) (*DWPoseRecord, error) {
	if !HasDWPose(src) {
		return nil, fmt.Errorf("dwpose: install: %s must hold %s and %s (huggingface.co/fashn-ai/DWPose)", src, FileYOLOX, FileDWPose)
	}
	dest := filepath.Join(modelsDir, DWPoseDir)
	staging, err := os.MkdirTemp(modelsDir, ".staging-dwpose-")
	if err != nil {
		return nil, fmt.Errorf("dwpose: install: %w", err)
	}
	defer os.RemoveAll(staging)
	rec := &DWPoseRecord{Installed: time.Now().UTC(), Files: map[string]string{}}
	rec.Source, _ = filepath.Abs(src)
	for _, f := range []string{FileYOLOX, FileDWPose} {
		if err := copyFile(ctx, filepath.Join(src, f), filepath.Join(staging, f)); err != nil {
			return nil, fmt.Errorf("dwpose: install: %w", err)
		}
		if rec.Files[f], err = fileSHA256(ctx, filepath.Join(staging, f)); err != nil {
			return nil, fmt.Errorf("dwpose: install: %w", err)
		}
	}
	d, err := LoadDWPose(ctx, rt, staging, "cpu")
	if err != nil {
		return nil, fmt.Errorf("dwpose: install: %w", err)
	}
	_, err = d.Detect(ctx, image.NewGray(image.Rect(0, 0, 64, 96)))
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("dwpose: install: dry run: %w", err)
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := os.WriteFile(filepath.Join(staging, dwRecordFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dest); err != nil {
		return nil, err
	}
	if err := os.Rename(staging, dest); err != nil {
		return nil, fmt.Errorf("dwpose: install: %w", err)
	}
	return rec, nil
}

// OpenDWPose loads the installed DWPose, re-hashing its files against the
// record; nil and no error when none is installed.
func OpenDWPose(ctx context.Context, rt *inference.Runtime, modelsDir, device string) (*DWPose, error) {
	dir := filepath.Join(modelsDir, DWPoseDir)
	b, err := os.ReadFile(filepath.Join(dir, dwRecordFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dwpose: %w", err)
	}
	var rec DWPoseRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("dwpose: %s: %w", dwRecordFile, err)
	}
	for _, f := range []string{FileYOLOX, FileDWPose} {
		sum, err := fileSHA256(ctx, filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("dwpose: %w", err)
		}
		if sum != rec.Files[f] {
			return nil, fmt.Errorf("dwpose: %s: sha256 %s, recorded %s at install (reinstall with fashiond models install DIR)", f, sum, rec.Files[f])
		}
	}
	return LoadDWPose(ctx, rt, dir, device)
}

// DWPoseStatus says whether DWPose is installed under modelsDir and, when
// it is, whether its files still match the record (for listings).
func DWPoseStatus(ctx context.Context, modelsDir string) string {
	dir := filepath.Join(modelsDir, DWPoseDir)
	b, err := os.ReadFile(filepath.Join(dir, dwRecordFile))
	if os.IsNotExist(err) {
		return "not installed (FASHN VTON pose maps fall back to BlazePose, body only; see docs/GENERATIVE.md)"
	}
	var rec DWPoseRecord
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return "unreadable: " + err.Error()
	}
	for _, f := range []string{FileYOLOX, FileDWPose} {
		if sum, err := fileSHA256(ctx, filepath.Join(dir, f)); err != nil || sum != rec.Files[f] {
			return fmt.Sprintf("%s does not match its recorded sha256 (reinstall)", f)
		}
	}
	return "verified (" + dir + ")"
}
