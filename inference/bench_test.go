package inference

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's user+system CPU time: on a shared machine it
// is steadier than wall time (ORT spinning is off, see Config).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchBatched compares, per image, 4 sequential single-image runs of the
// original graph ("unbatched") with 4 concurrent requests through a
// Batcher over the rewritten graph ("batched", one batch-4 call).
func benchBatched(b *testing.B, name string, inputs, outputs []string, shape []int64) {
	rt := testRuntime(b)
	ctx := context.Background()
	orig, err := rt.NewSession(ctx, SessionSpec{Name: name, Path: modelPath(b, name+".onnx"), Inputs: inputs, Outputs: outputs})
	if err != nil {
		b.Fatal(err)
	}
	defer orig.Close()
	bs, err := rt.NewSession(ctx, SessionSpec{Name: name, Path: modelPath(b, name+".batch.onnx"), Inputs: inputs, Outputs: outputs})
	if err != nil {
		b.Fatal(err)
	}
	defer bs.Close()
	const n = 4
	imgs := randomImages(n, shape, 1)
	// Warm both sessions up (arena growth, first-run planning).
	for range 2 {
		if _, err := orig.Run(ctx, imgs[:1]); err != nil {
			b.Fatal(err)
		}
		if _, err := bs.Run(ctx, []Tensor{concatTensors(imgs)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("unbatched", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			for i := range imgs {
				if _, err := orig.Run(ctx, imgs[i:i+1]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "img/s")
		b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N*n), "cpu-ms/img")
	})
	b.Run("batched", func(b *testing.B) {
		bt := NewBatcher(bs, BatchOptions{MaxBatch: n, MaxDelay: 4 * time.Millisecond, Name: name})
		defer bt.Close()
		c0 := cpuTime()
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range imgs {
				wg.Go(func() {
					if _, err := bt.Run(ctx, imgs[i:i+1]); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "img/s")
		b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N*n), "cpu-ms/img")
		b.ReportMetric(bt.Stats().MeanFill, "fill")
	})
}

func BenchmarkBatchedPose(b *testing.B) {
	benchBatched(b, "blazepose_full", []string{"input_1"}, []string{"Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4"}, []int64{1, 256, 256, 3})
}

func BenchmarkBatchedPoseLite(b *testing.B) {
	benchBatched(b, "blazepose_lite", []string{"input_1"}, []string{"Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4"}, []int64{1, 256, 256, 3})
}

func BenchmarkBatchedSelfie(b *testing.B) {
	benchBatched(b, "selfie_segmentation", []string{"input_1:0"}, []string{"activation_10"}, []int64{1, 256, 256, 3})
}

func BenchmarkBatchedParsing(b *testing.B) {
	benchBatched(b, "skin_clothes_hair_pan", []string{"x.1"}, []string{"1273"}, []int64{1, 3, 512, 512})
}

func BenchmarkBatchedDepth(b *testing.B) {
	benchBatched(b, "tcmonodepth_small", []string{"input"}, []string{"output"}, []int64{1, 3, 192, 320})
}

func BenchmarkBatchedSRTiles(b *testing.B) {
	benchBatched(b, "realesr_general_x4v3", []string{"data"}, []string{"output"}, []int64{1, 3, 64, 64})
}
