package spec

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The duplicates rule: the spec's names, value sets, limits and lifecycle
// words are written once, in this package. TestSpec_RulesWrittenOnlyHere
// scans the repository's non-test Go files outside spec and fails on a copy.

// skipDirs are directories the scan does not enter (not the service's Go
// code: scratch, fixtures, dependencies).
var skipDirs = map[string]bool{".git": true, "tmp": true, "playground": true, "testdata": true,
	"vendor": true, "node_modules": true, ".deps": true, "data": true, "spec": true}

// pendingCopies are files, owned by other work in progress, that still hold
// a copy; each is reported (t.Log) and must be taken off this list once it
// reads package spec instead.
var pendingCopies = map[string]string{}

// copyPatterns are the written forms of the spec's rules.
func copyPatterns() []*regexp.Regexp {
	var ps []*regexp.Regexp
	for _, m := range ModelNames {
		ps = append(ps, regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(m))))
	}
	for _, l := range LifecycleLabels {
		ps = append(ps, regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(l))))
	}
	for _, set := range [][]string{Qualities, Ratios[:3], StyleIDs[:3], AngleIDs[:3], Accuracies} {
		ps = append(ps, regexp.MustCompile(regexp.QuoteMeta(`"`+strings.Join(set, `", "`)+`"`)))
	}
	return append(ps,
		// sampleCount's range in any wording: 1 to 4, 1-4, 1..4, > 4.
		regexp.MustCompile(`(?i)samplecount.*(\b1 ?(to|-|\.\.) ?(4|%d)\b|> ?4\b)`),
		// a 500-character text limit.
		regexp.MustCompile(`(?i)(text|prompt|chars|runes)\w* *= *500\b`),
	)
}

// goFiles lists the repository's non-test Go files outside skipDirs,
// relative to root.
func goFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copiesIn returns "line: text" for each line of path matching a pattern.
func copiesIn(t *testing.T, path string, ps []*regexp.Regexp) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hits []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		for _, p := range ps {
			if p.MatchString(line) {
				hits = append(hits, strconv.Itoa(n)+": "+strings.TrimSpace(line))
				break
			}
		}
	}
	return hits
}

// "The spec's sentences ... live in one place": no model name, value set,
// lifecycle word, sampleCount range or 500-character limit is written
// outside package spec.
func TestSpec_RulesWrittenOnlyHere(t *testing.T) {
	root := ".."
	ps := copyPatterns()
	files := goFiles(t, root)
	if len(files) < 50 {
		t.Fatalf("found %d Go files under %s; the scan is not looking at the repository", len(files), root)
	}
	for _, rel := range files {
		hits := copiesIn(t, filepath.Join(root, rel), ps)
		if len(hits) == 0 {
			continue
		}
		if why, ok := pendingCopies[rel]; ok {
			t.Logf("pending (%s): %s:\n\t%s", why, rel, strings.Join(hits, "\n\t"))
			continue
		}
		t.Errorf("%s writes the spec's rules again (read package spec):\n\t%s", rel, strings.Join(hits, "\n\t"))
	}
}

// TestCopyPatternsCatchCopies: each pattern finds the copies it is for and
// not the code that reads package spec.
func TestCopyPatternsCatchCopies(t *testing.T) {
	ps := copyPatterns()
	matches := func(line string) bool {
		for _, p := range ps {
			if p.MatchString(line) {
				return true
			}
		}
		return false
	}
	for line, want := range map[string]bool{
		`func (*Pipeline) Name() string { return "tryon" }`:                      true,
		`return pipelines.Failf("inputs.sampleCount must be 1 to 4, not %d", n)`: true,
		`if in.SampleCount < 1 || in.SampleCount > 4 {`:                          true,
		`Failf("prompt-tryon: sampleCount %d out of range 1-4", n)`:              true,
		`const MaxPromptRunes = 500`:                                             true,
		`Lifecycle: "experimental"`:                                              true,
		`for _, q := range []string{"1k", "2k", "4k"} {`:                         true,
		`func (*Pipeline) Name() string { return spec.ModelTryOn }`:              false,
		`"pipeline/tryon@" + acc`:                                                false,
		`n := in.SampleCount`:                                                    false,
	} {
		if got := matches(line); got != want {
			t.Errorf("%s: matched %v, want %v", line, got, want)
		}
	}
}
