// Command testsummary reads `go test -json` on stdin, prints the test output as it arrives and, at the
// end, one summary line for the tier named by its first argument. Ginkgo suites run as a single Go test,
// so for them the spec counts from Ginkgo's own report line are used instead.
//
// It appends "<tier> <passed> <failed> <skipped> <seconds>" to the file named by $TEST_SUMMARY_FILE, if
// set, and exits non-zero when a test or a package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// ginkgoLine matches Ginkgo's summary, e.g. "SUCCESS! -- 4 Passed | 0 Failed | 0 Pending | 1 Skipped".
var ginkgoLine = regexp.MustCompile(`(\d+) Passed \| (\d+) Failed \| \d+ Pending \| (\d+) Skipped`)

// ansi matches terminal colour sequences, which Ginkgo puts inside its summary line.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

type counts struct{ passed, failed, skipped int }

func main() {
	tier := "tests"
	if len(os.Args) > 1 {
		tier = os.Args[1]
	}
	start := time.Now()
	perPkg := map[string]*counts{} // go test counts, per package
	ginkgo := map[string]*counts{} // Ginkgo spec counts, per package
	failedPkgs := map[string]bool{}
	get := func(m map[string]*counts, k string) *counts {
		if m[k] == nil {
			m[k] = &counts{}
		}
		return m[k]
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for in.Scan() {
		line := in.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			fmt.Println(string(line)) // build errors and other non-JSON output
			continue
		}
		switch ev.Action {
		case "output":
			fmt.Print(ev.Output)
			if m := ginkgoLine.FindStringSubmatch(ansi.ReplaceAllString(ev.Output, "")); m != nil {
				c := get(ginkgo, ev.Package)
				c.passed, c.failed, c.skipped = atoi(m[1]), atoi(m[2]), atoi(m[3])
			}
		case "pass", "fail", "skip":
			if ev.Test == "" {
				if ev.Action == "fail" {
					failedPkgs[ev.Package] = true
				}
				continue
			}
			c := get(perPkg, ev.Package)
			switch ev.Action {
			case "pass":
				c.passed++
			case "fail":
				c.failed++
			case "skip":
				c.skipped++
			}
		}
	}
	var total counts
	for pkg, c := range perPkg {
		if g, ok := ginkgo[pkg]; ok {
			c = g
		}
		total.passed += c.passed
		total.failed += c.failed
		total.skipped += c.skipped
	}
	for pkg := range failedPkgs {
		if c := perPkg[pkg]; c == nil || (c.failed == 0 && (ginkgo[pkg] == nil || ginkgo[pkg].failed == 0)) {
			total.failed++ // a package that failed without a failing test: build error, panic, timeout
		}
	}
	secs := int(time.Since(start).Seconds())
	fmt.Printf("\n== %s: %d passed, %d failed, %d skipped in %ds\n", tier, total.passed, total.failed, total.skipped, secs)
	if f := os.Getenv("TEST_SUMMARY_FILE"); f != "" {
		if out, err := os.OpenFile(filepath.Clean(f), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil { //nolint:gosec // the path comes from hack/test.sh, not from input
			fmt.Fprintf(out, "%s %d %d %d %d\n", tier, total.passed, total.failed, total.skipped, secs)
			_ = out.Close()
		}
	}
	if total.failed > 0 || len(failedPkgs) > 0 {
		os.Exit(1)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
