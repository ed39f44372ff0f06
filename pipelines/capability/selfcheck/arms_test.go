package selfcheck

import (
	"image"
	"testing"

	"fashiond/perception"
)

func pt(x, y float64) perception.Point { return perception.Point{X: x, Y: y} }

// TestHandLeftBehind: a forearm swung up whose old hand the output still
// shows fails; the same with the old place repainted passes; a forearm
// that barely moved is not read.
func TestHandLeftBehind(t *testing.T) {
	const w, h = 200, 200
	src := stripes(w, h)
	was := rectMask(w, h, image.Rect(0, 0, w, h))
	repainted := image.NewRGBA(src.Rect) // flat grey: nothing of the black and white source
	for i := range repainted.Pix {
		repainted.Pix[i] = 128
	}
	// elbow (100,100), wrist (100,140): the hand's centre at (100,150), r 12.
	swung := Bone{Name: "13-15", Src: [2]perception.Point{pt(100, 100), pt(100, 140)}, Out: [2]perception.Point{pt(100, 100), pt(140, 100)}}
	still := Bone{Name: "13-15", Src: swung.Src, Out: [2]perception.Point{pt(100, 100), pt(105, 139)}}
	for _, c := range []struct {
		name  string
		out   *image.RGBA
		bone  Bone
		value float64
	}{
		{"old hand still shown", src, swung, 1},
		{"old place repainted", repainted, swung, 0},
		{"hand barely moved", src, still, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := HandLeftBehind(src, c.out, was, []Bone{c.bone})
			if got.Name != NameHandLeftBehind || got.Value != c.value || got.Pass != (c.value <= MaxHandLeftBehind) {
				t.Fatalf("%+v, want value %v", got, c.value)
			}
		})
	}
}

// TestHandOutOfFrame: a moved hand placed beyond the picture's edge
// fails, one placed inside passes, an unmoved arm is not counted.
func TestHandOutOfFrame(t *testing.T) {
	src := [2]perception.Point{pt(100, 100), pt(100, 140)}
	for _, c := range []struct {
		name  string
		bones []Bone
		value float64
	}{
		{"raised inside", []Bone{{Src: src, Out: [2]perception.Point{pt(100, 100), pt(100, 60)}}}, 0},
		{"raised past the top", []Bone{{Src: src, Out: [2]perception.Point{pt(100, 30), pt(100, 2)}}}, 1},
		{"one of two out", []Bone{{Src: src, Out: [2]perception.Point{pt(100, 30), pt(100, 2)}}, {Src: src, Out: [2]perception.Point{pt(100, 100), pt(140, 100)}}}, 0.5},
		{"not moved", []Bone{{Src: src, Out: src}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := HandOutOfFrame(200, 200, c.bones)
			if got.Name != NameHandOutOfFrame || got.Value != c.value || got.Pass != (c.value == 0) {
				t.Fatalf("%+v, want value %v", got, c.value)
			}
		})
	}
}
