package bench

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"text/tabwriter"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// WriteTable prints the results as an aligned table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the results measured before the interruption (partial rows: iterations that finished)")
	}
	fmt.Fprintf(tw, "stage\tbatching\tp50 ms\tp95 ms\tthroughput/s\tmean fill\tRSS MB\tspeedup\terrors\t\n")
	for _, s := range r.Stages {
		for _, run := range s.Runs {
			sp := ""
			if s.BatchedSpeedup != nil && run.Batching {
				sp = fmt.Sprintf("%.2fx", *s.BatchedSpeedup)
			}
			mode := onOff(run.Batching)
			if run.Partial {
				mode += fmt.Sprintf(" (partial, %d iters)", run.Iters)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.0f\t%s\t%d\t\n",
				s.Stage, mode, run.P50MS, run.P95MS, run.Throughput, run.MeanBatchFill, run.RSSMB, sp, run.Errors)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "device %s, %d CPUs, concurrency %d, %d iterations (+%d warm-up); RSS baseline %.0f MB, with every model loaded %.0f MB\n",
		r.Device, r.CPUs, r.Concurrency, r.Iters, r.Warmup, r.RSSBaselineMB, r.RSSAllModelsMB)
	return err
}

// WriteJSON writes the report to a file.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

var (
	colBG     = color.RGBA{255, 255, 255, 255}
	colText   = color.RGBA{30, 30, 30, 255}
	colGrid   = color.RGBA{225, 225, 225, 255}
	colOff    = color.RGBA{150, 150, 160, 255}
	colOn     = color.RGBA{40, 110, 200, 255}
	colP95    = color.RGBA{240, 150, 40, 255}
	chartFace = basicfont.Face7x13
)

// Chart draws the report: per stage, throughput (left panel, linear, each
// bar labelled) and p50 latency with the p95 marked (right panel, log
// scale), batching off in grey and on in blue.
func (r *Report) Chart() *image.RGBA {
	const (
		rowH    = 34
		panelW  = 360
		gap     = 40
		top     = 64
		bottom  = 40
		barH    = 12
		margins = 16
	)
	n := len(r.Stages)
	// The label column fits the longest label (7 px per basicfont glyph).
	labelW := 190
	for _, s := range r.Stages {
		l := len(s.Stage)
		if s.BatchedSpeedup != nil {
			l += len(" (x0.00)")
		}
		labelW = max(labelW, 7*l+12)
	}
	W := margins + labelW + panelW + gap + panelW + margins + 60
	H := top + n*rowH + bottom
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Rect, &image.Uniform{colBG}, image.Point{}, draw.Src)
	text(img, margins, 20, fmt.Sprintf("fashiond bench - %s, %d CPUs, concurrency %d, %d iters; RSS all models %.0f MB",
		r.Device, r.CPUs, r.Concurrency, r.Iters, r.RSSAllModelsMB), colText)
	x1 := margins + labelW
	x2 := x1 + panelW + gap
	text(img, x1, 44, "throughput (requests/s)", colText)
	text(img, x2, 44, "latency p50 bar, p95 tick (ms, log)", colText)
	fillRect(img, W-150, 10, 12, 10, colOff)
	text(img, W-134, 20, "batching off", colText)
	fillRect(img, W-150, 28, 12, 10, colOn)
	text(img, W-134, 38, "batching on", colText)

	maxThr, minLat, maxLat := 0.0, math.Inf(1), 0.0
	for _, s := range r.Stages {
		for _, run := range s.Runs {
			maxThr = math.Max(maxThr, run.Throughput)
			if run.P50MS > 0 {
				minLat = math.Min(minLat, run.P50MS)
			}
			maxLat = math.Max(maxLat, run.P95MS)
		}
	}
	if maxThr <= 0 {
		maxThr = 1
	}
	lo := math.Pow(10, math.Floor(math.Log10(math.Max(minLat, 0.1))))
	hi := math.Pow(10, math.Ceil(math.Log10(math.Max(maxLat, lo*10))))
	logX := func(v float64) int {
		v = math.Max(v, lo)
		return x2 + int(float64(panelW)*math.Log10(v/lo)/math.Log10(hi/lo))
	}
	// Log grid lines with labels.
	for d := lo; d <= hi*1.0001; d *= 10 {
		x := logX(d)
		fillRect(img, x, top-6, 1, n*rowH+6, colGrid)
		text(img, x-8, top+n*rowH+16, fmtMS(d), colText)
	}
	for q := 0; q <= 4; q++ {
		x := x1 + panelW*q/4
		fillRect(img, x, top-6, 1, n*rowH+6, colGrid)
		text(img, x-8, top+n*rowH+16, fmt.Sprintf("%.3g", maxThr*float64(q)/4), colText)
	}
	for i, s := range r.Stages {
		y := top + i*rowH
		label := s.Stage
		if s.BatchedSpeedup != nil {
			label = fmt.Sprintf("%s (x%.2f)", s.Stage, *s.BatchedSpeedup)
		}
		text(img, margins, y+rowH/2+4, label, colText)
		for j, run := range s.Runs {
			c := colOff
			if run.Batching {
				c = colOn
			}
			by := y + 3 + j*(barH+2)
			if len(s.Runs) == 1 {
				by = y + (rowH-barH)/2
			}
			w := int(float64(panelW) * run.Throughput / maxThr)
			fillRect(img, x1, by, max(w, 1), barH, c)
			text(img, x1+max(w, 1)+4, by+barH-2, fmt.Sprintf("%.3g", run.Throughput), colText)
			if run.P50MS > 0 {
				lx := logX(run.P50MS)
				fillRect(img, x2, by, max(lx-x2, 1), barH, c)
				px := logX(run.P95MS)
				fillRect(img, px, by-1, 2, barH+2, colP95)
				text(img, max(lx, px)+5, by+barH-2, fmtMS(run.P50MS), colText)
			}
		}
	}
	return img
}

func fmtMS(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fs", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// WriteChart draws the chart to a PNG file.
func (r *Report) WriteChart(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, r.Chart()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func text(img draw.Image, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: chartFace, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func fillRect(img *image.RGBA, x, y, w, h int, c color.Color) {
	draw.Draw(img, image.Rect(x, y, x+w, y+h), &image.Uniform{c}, image.Point{}, draw.Src)
}
