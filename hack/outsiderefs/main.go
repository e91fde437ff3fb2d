// Command outsiderefs fails when a file of the repository cites something outside it: the repository must stand
// alone, so comments, test names, messages and docs state a rule in their own words, or cite the repository's
// own docs by file (docs/<api>.md, docs/design/<api>.md), never a document a reader of the repository cannot open.
//
//	go run ./hack/outsiderefs   # from the repository root; hack/verify.sh runs it
//
// It scans the files git tracks that carry prose: Go files outside hack/tools, docs/**/*.md, README.md,
// config/samples/README.md and the Makefile. For each hit it prints "file:line: text" and it exits 1 when there
// is any. Names of standards shaped like rule ids (DNS-1123, SHA-256) are not hits. This directory itself is
// not scanned: it has to spell the patterns out.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
)

// patterns are the citations of things outside the repository, with what each one catches.
var patterns = []struct {
	what string
	re   *regexp.Regexp
}{
	// The patterns are written in escapes, so that this file does not itself cite what it looks for.
	{"section sign", regexp.MustCompile(`\x{00A7}`)},
	{"path outside the repository", regexp.MustCompile(`\.\./shared`)},
	{"design document outside the repository", regexp.MustCompile(`DESIGN\.md`)},
	{"specification file", regexp.MustCompile(`spec[s]/[A-Za-z0-9_.-]+\.md`)},
	{"specification rule id", regexp.MustCompile(`\b(YC|WH|NP|PF|KS|SM|SIM|GATE|CEL|PERF|ST|SHA|API|DNS)-[0-9]+\b`)},
	{"issue number", regexp.MustCompile(`(?i)\bissue [0-9]+`)},
}

// standards are names of standards that have the shape of a rule id; they are not citations.
var standards = map[string]bool{
	"DNS-1035": true, "DNS-1123": true, "SHA-224": true, "SHA-256": true, "SHA-384": true, "SHA-512": true,
}

// matches reports whether line holds a match of re that is not the name of a standard.
func matches(re *regexp.Regexp, line string) bool {
	for _, m := range re.FindAllString(line, -1) {
		if !standards[m] {
			return true
		}
	}
	return false
}

// Hit is one line citing something outside the repository.
type Hit struct {
	File string
	Line int
	Text string
}

func (h Hit) String() string { return fmt.Sprintf("%s:%d: %s", h.File, h.Line, h.Text) }

// selected reports whether the tracked file p (slash-separated, relative to the root) is scanned.
func selected(p string) bool {
	switch {
	case strings.HasPrefix(p, "hack/tools/"):
		return false
	case strings.HasSuffix(p, ".go"):
		return true
	case strings.HasPrefix(p, "docs/") && path.Ext(p) == ".md":
		return true
	}
	return p == "README.md" || p == "config/samples/README.md" || p == "Makefile"
}

// scan returns the lines of r that match any pattern, named file.
func scan(file string, r io.Reader) ([]Hit, error) {
	var hits []Hit
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, p := range patterns {
			if matches(p.re, line) {
				hits = append(hits, Hit{File: file, Line: n, Text: strings.TrimSpace(line)})
				break
			}
		}
	}
	return hits, sc.Err()
}

func trackedFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 && selected(string(f)) {
			files = append(files, string(f))
		}
	}
	return files, nil
}

func run(stdout io.Writer) (int, error) {
	files, err := trackedFiles()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, f := range files {
		fh, err := os.Open(f) //nolint:gosec // a path git tracks, read only
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return total, err
		}
		hits, err := scan(f, fh)
		_ = fh.Close()
		if err != nil {
			return total, fmt.Errorf("%s: %w", f, err)
		}
		for _, h := range hits {
			_, _ = fmt.Fprintln(stdout, h)
		}
		total += len(hits)
	}
	return total, nil
}

func main() {
	n, err := run(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "outsiderefs:", err)
		os.Exit(2)
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "outsiderefs: %d line(s) cite something outside the repository; "+
			"state the rule itself or cite the repository's own docs\n", n)
		os.Exit(1)
	}
}
