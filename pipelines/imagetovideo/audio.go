package imagetovideo

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Bed is an ambient sound bed synthesised for the clip.
type Bed string

const (
	BedStudio Bed = "studio-room-tone"
	BedStreet Bed = "street"
	BedNature Bed = "nature-wind-birds"
	BedRunway Bed = "runway-beat"
	BedBeach  Bed = "beach-waves"
	BedCafe   Bed = "cafe"
	BedRain   Bed = "rain"
)

var bedWords = []struct {
	phrase string
	bed    Bed
}{
	{"rain", BedRain}, {"raining", BedRain}, {"rainy", BedRain}, {"storm", BedRain}, {"drizzle", BedRain},
	{"umbrella", BedRain}, {"wet", BedRain},
	{"beach", BedBeach}, {"ocean", BedBeach}, {"sea", BedBeach}, {"seaside", BedBeach}, {"waves", BedBeach},
	{"surf", BedBeach}, {"coast", BedBeach}, {"shore", BedBeach}, {"tropical", BedBeach}, {"pool", BedBeach},
	{"runway", BedRunway}, {"catwalk", BedRunway}, {"fashion show", BedRunway}, {"beat", BedRunway},
	{"music", BedRunway}, {"club", BedRunway}, {"party", BedRunway}, {"dance", BedRunway}, {"dancing", BedRunway},
	{"cafe", BedCafe}, {"café", BedCafe}, {"coffee", BedCafe}, {"restaurant", BedCafe}, {"bar", BedCafe},
	{"brunch", BedCafe}, {"bistro", BedCafe},
	{"street", BedStreet}, {"city", BedStreet}, {"urban", BedStreet}, {"downtown", BedStreet},
	{"traffic", BedStreet}, {"road", BedStreet}, {"sidewalk", BedStreet}, {"crosswalk", BedStreet},
	{"alley", BedStreet}, {"new york", BedStreet}, {"paris", BedStreet}, {"tokyo", BedStreet},
	{"forest", BedNature}, {"park", BedNature}, {"garden", BedNature}, {"nature", BedNature},
	{"field", BedNature}, {"meadow", BedNature}, {"wind", BedNature}, {"windy", BedNature}, {"breeze", BedNature},
	{"birds", BedNature}, {"mountain", BedNature}, {"outdoor", BedNature}, {"outdoors", BedNature},
	{"studio", BedStudio}, {"indoor", BedStudio}, {"backdrop", BedStudio}, {"photoshoot", BedStudio},
}

// ChooseBed picks the ambient bed from the prompt's words (the earliest
// match wins); the default is studio room tone.
func ChooseBed(prompt string) Bed {
	bed, _ := matchBed(prompt)
	return bed
}

// matchBed is the bed of the prompt's earliest setting phrase and the
// phrase; BedStudio and "" when it names none.
func matchBed(prompt string) (Bed, string) {
	ps := make([]string, len(bedWords))
	for i, b := range bedWords {
		ps[i] = b.phrase
	}
	if i := firstMatch(normalise(prompt), ps); i >= 0 {
		return bedWords[i].bed, bedWords[i].phrase
	}
	return BedStudio, ""
}

// synth is a tiny stereo synthesiser with a deterministic random source.
type synth struct {
	rate int
	rng  *rand.Rand
	l, r []float64
}

func newSynth(seconds float64, rate int, seed uint64) *synth {
	n := int(math.Ceil(seconds * float64(rate)))
	return &synth{rate: rate, rng: rand.New(rand.NewPCG(seed, 0xa0d10)), l: make([]float64, n), r: make([]float64, n)}
}

// onePole is a one-pole low-pass filter.
type onePole struct{ a, y float64 }

func newLP(cut float64, rate int) onePole {
	return onePole{a: 1 - math.Exp(-2*math.Pi*cut/float64(rate))}
}
func (f *onePole) step(x float64) float64 { f.y += f.a * (x - f.y); return f.y }

// noiseBed adds band-limited noise (low-pass lp, high-pass hp Hz) with a
// gain envelope env(t) and a stereo decorrelation.
func (s *synth) noiseBed(lp, hp float64, env func(t float64) float64) {
	fl, fr := newLP(lp, s.rate), newLP(lp, s.rate)
	hl, hr := newLP(hp, s.rate), newLP(hp, s.rate)
	for i := range s.l {
		t := float64(i) / float64(s.rate)
		g := env(t)
		a := fl.step(s.rng.NormFloat64())
		b := fr.step(s.rng.NormFloat64())
		s.l[i] += g * (a - hl.step(a))
		s.r[i] += g * (b - hr.step(b))
	}
}

// tone adds a decaying sine burst (freq sweeping f0->f1) at time t0.
func (s *synth) tone(t0, dur, f0, f1, gain, pan float64) {
	i0 := int(t0 * float64(s.rate))
	n := int(dur * float64(s.rate))
	ph := 0.0
	for k := 0; k < n && i0+k < len(s.l); k++ {
		if i0+k < 0 {
			continue
		}
		u := float64(k) / float64(n)
		f := f0 + (f1-f0)*u
		ph += 2 * math.Pi * f / float64(s.rate)
		env := math.Sin(math.Pi*math.Min(1, u*6)) * math.Exp(-3*u)
		if u*6 >= 1 {
			env = math.Exp(-3 * u)
		}
		v := gain * env * math.Sin(ph)
		s.l[i0+k] += v * (1 - pan)
		s.r[i0+k] += v * (1 + pan)
	}
}

// burst adds a short decaying noise burst (clicks, hats, drops).
func (s *synth) burst(t0, dur, lp, gain, pan float64) {
	i0 := int(t0 * float64(s.rate))
	n := max(1, int(dur*float64(s.rate)))
	f := newLP(lp, s.rate)
	h := newLP(lp/4, s.rate)
	for k := 0; k < n && i0+k < len(s.l); k++ {
		if i0+k < 0 {
			continue
		}
		e := math.Exp(-5 * float64(k) / float64(n))
		x := f.step(s.rng.NormFloat64())
		x -= h.step(x)
		v := gain * e * x
		s.l[i0+k] += v * (1 - pan)
		s.r[i0+k] += v * (1 + pan)
	}
}

// kick adds a bass drum hit.
func (s *synth) kick(t0, gain float64) {
	i0 := int(t0 * float64(s.rate))
	n := int(0.35 * float64(s.rate))
	ph := 0.0
	for k := 0; k < n && i0+k < len(s.l); k++ {
		u := float64(k) / float64(s.rate)
		f := 45 + 90*math.Exp(-u*30)
		ph += 2 * math.Pi * f / float64(s.rate)
		v := gain * math.Exp(-u*9) * math.Sin(ph)
		s.l[i0+k] += v
		s.r[i0+k] += v
	}
}

// SynthesizeBed renders the bed as 16-bit little-endian interleaved stereo
// PCM at rate Hz. The same bed, length and seed give the same audio.
func SynthesizeBed(bed Bed, seconds float64, rate int, seed uint64) []byte {
	s := newSynth(seconds, rate, seed)
	T := seconds
	switch bed {
	case BedStreet:
		s.noiseBed(250, 30, func(t float64) float64 { return 0.05 })
		// passing cars: swelling band noise
		for t := s.rng.Float64() * 1.5; t < T; t += 1.8 + s.rng.Float64()*2.5 {
			c, w, pan := t, 1.2+s.rng.Float64(), s.rng.Float64()*1.6-0.8
			s.noiseBedPan(700, 80, pan, func(x float64) float64 {
				d := (x - c) / w
				return 0.12 * math.Exp(-d*d*3)
			})
		}
		for t := 0.5 + s.rng.Float64()*3; t < T; t += 3 + s.rng.Float64()*4 {
			s.tone(t, 0.35, 440, 430, 0.04, s.rng.Float64()-0.5) // distant horn
			s.tone(t, 0.35, 554, 544, 0.03, s.rng.Float64()-0.5)
		}
	case BedNature:
		s.noiseBed(500, 40, func(t float64) float64 {
			return 0.07 + 0.05*math.Sin(2*math.Pi*t/5.3) + 0.02*math.Sin(2*math.Pi*t/1.7)
		})
		for t := s.rng.Float64(); t < T; t += 0.8 + s.rng.Float64()*1.6 {
			pan := s.rng.Float64()*1.4 - 0.7
			f := 2600 + s.rng.Float64()*1800
			for k := 0; k < 2+s.rng.IntN(3); k++ {
				s.tone(t+float64(k)*0.12, 0.08+s.rng.Float64()*0.05, f, f*(1.2+s.rng.Float64()*0.3), 0.05, pan)
			}
		}
	case BedRunway:
		s.noiseBed(2000, 100, func(t float64) float64 { return 0.01 })
		beat := 60.0 / 122
		bass := []float64{55, 55, 65.4, 49}
		for i, t := 0, 0.0; t < T; i, t = i+1, t+beat {
			s.kick(t, 0.5)
			s.burst(t+beat/2, 0.05, 9000, 0.12, 0.2)
			if i%4 == 2 {
				s.burst(t, 0.18, 4000, 0.15, -0.1) // clap
			}
			f := bass[(i/4)%len(bass)]
			s.tone(t+beat/2, beat*0.45, f*2, f*2, 0.12, 0)
		}
	case BedBeach:
		s.noiseBed(900, 60, func(t float64) float64 {
			p := math.Mod(t+1.3, 6.5) / 6.5
			swell := math.Pow(math.Sin(math.Pi*p), 3)
			return 0.04 + 0.22*swell
		})
		s.noiseBed(3000, 800, func(t float64) float64 {
			p := math.Mod(t+1.3, 6.5) / 6.5
			return 0.05 * math.Pow(math.Max(0, math.Sin(math.Pi*(p-0.35)/0.65)), 4)
		})
	case BedCafe:
		for v := 0; v < 4; v++ {
			rate, phase := 3.5+s.rng.Float64()*2.5, s.rng.Float64()*10
			pan := s.rng.Float64()*1.2 - 0.6
			s.noiseBedPan(1400, 250, pan, func(t float64) float64 {
				m := 0.5 + 0.5*math.Sin(2*math.Pi*rate*t+phase+math.Sin(t*1.3+phase))
				return 0.035 * m * (0.6 + 0.4*math.Sin(t*0.7+phase))
			})
		}
		for t := 0.4 + s.rng.Float64(); t < T; t += 1.2 + s.rng.Float64()*2.2 {
			f := 2200 + s.rng.Float64()*1500
			pan := s.rng.Float64() - 0.5
			s.tone(t, 0.25, f, f, 0.035, pan)
			s.tone(t, 0.2, f*2.76, f*2.76, 0.015, pan)
		}
	case BedRain:
		s.noiseBed(7000, 900, func(t float64) float64 { return 0.09 })
		s.noiseBed(300, 30, func(t float64) float64 { return 0.05 })
		for t := 0.0; t < T; t += 0.01 + s.rng.Float64()*0.05 {
			s.burst(t, 0.006, 6000, 0.05+s.rng.Float64()*0.08, s.rng.Float64()*1.6-0.8)
		}
	default: // studio room tone with camera shutters
		s.noiseBed(400, 25, func(t float64) float64 { return 0.03 })
		for i := 0; i < len(s.l); i++ {
			h := 0.004 * math.Sin(2*math.Pi*60*float64(i)/float64(s.rate))
			s.l[i] += h
			s.r[i] += h
		}
		for t := 0.6 + s.rng.Float64(); t < T-0.3; t += 1.1 + s.rng.Float64()*1.8 {
			pan := s.rng.Float64()*0.8 - 0.4
			s.burst(t, 0.012, 5000, 0.35, pan)
			s.burst(t+0.06+s.rng.Float64()*0.03, 0.02, 3000, 0.25, pan)
		}
	}
	return s.pcm()
}

// noiseBedPan is noiseBed with a mono source panned left (-1) to right (+1).
func (s *synth) noiseBedPan(lp, hp, pan float64, env func(t float64) float64) {
	f, hf := newLP(lp, s.rate), newLP(hp, s.rate)
	for i := range s.l {
		t := float64(i) / float64(s.rate)
		g := env(t)
		if g < 1e-4 {
			continue
		}
		a := f.step(s.rng.NormFloat64())
		v := g * (a - hf.step(a))
		s.l[i] += v * (1 - pan)
		s.r[i] += v * (1 + pan)
	}
}

// pcm normalises to a -3 dBFS peak... never louder than the natural level
// and converts to s16le interleaved.
func (s *synth) pcm() []byte {
	peak := 1e-9
	for i := range s.l {
		peak = math.Max(peak, math.Max(math.Abs(s.l[i]), math.Abs(s.r[i])))
	}
	g := 1.0
	if peak > 0.7 {
		g = 0.7 / peak
	}
	out := make([]byte, len(s.l)*4)
	for i := range s.l {
		binary.LittleEndian.PutUint16(out[i*4:], uint16(int16(math.Round(clamp1(s.l[i]*g)*32767))))
		binary.LittleEndian.PutUint16(out[i*4+2:], uint16(int16(math.Round(clamp1(s.r[i]*g)*32767))))
	}
	return out
}

func clamp1(v float64) float64 { return math.Max(-1, math.Min(1, v)) }
