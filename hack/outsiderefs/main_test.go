package main

import (
	"strings"
	"testing"
)

// cite expands the placeholders of a test line into the citations the checker looks for, so that this
// file does not itself hold any: {sect} is the section sign, {up} the path to the folder beside the
// repository, {design} the outside design document, {specs} the outside specification folder, {-} the dash of
// a rule id and {_} the space after "issue".
func cite(line string) string {
	return strings.NewReplacer("{sect}", "\u00a7", "{up}", "../"+"shared", "{design}", "DESIGN"+".md",
		"{specs}", "spec"+"s/", "{-}", "-", "{_}", " ").Replace(line)
}

func TestScanFindsEachKindOfOutsideReference(t *testing.T) {
	cases := map[string]bool{
		"// adopt orphans (YC{-}12)":                        true,
		"// see {sect}6.3 for the order":                    true,
		"Specifications live in `{up}/{specs}`.":            true,
		"// import aliases from {design}":                   true,
		"// as {specs}tapp.md requires":                     true,
		"t.Run(\"WH{-}8 rejects a bad pool\", ...)":         true,
		"// PERF{-}3, GATE{-}12, CEL{-}1, SIM{-}2, DNS{-}1": true,
		"// fixed after issue{_}4 item 7":                   true,
		"// Issue{_}12 again":                               true,
		"// adopt orphans: no controller, our labels":       false,
		"// names follow RFC-1123":                          false,
		"// HTTP-2 is off (CVE-2023-44487)":                 false,
		"see docs/design/tapp.md and docs/tapp.md":          false,
		"// an issue with 3 pods":                           false,
		"XYC{-}12 is not a rule id, nor is YC{-}x":          false,
	}
	for line, want := range cases {
		line := cite(line)
		hits, err := scan("f.go", strings.NewReader("package x\n"+line+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(hits) == 1; got != want {
			t.Errorf("%q: hit = %v, want %v (%v)", line, got, want, hits)
		}
		if want && len(hits) == 1 && (hits[0].Line != 2 || hits[0].File != "f.go") {
			t.Errorf("%q: hit at %s, want f.go:2", line, hits[0])
		}
	}
}

func TestScanReportsEachLineOnceWithItsNumber(t *testing.T) {
	hits, err := scan("README.md", strings.NewReader(cite("ok\nYC{-}1 and {sect}2 on one line\nok\n  see {up}  \n")))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(hits))
	for _, h := range hits {
		got = append(got, h.String())
	}
	want := []string{cite("README.md:2: YC{-}1 and {sect}2 on one line"), cite("README.md:4: see {up}")}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("hits = %q, want %q", got, want)
	}
}

func TestSelectedFiles(t *testing.T) {
	cases := map[string]bool{
		"internal/kit/outcome.go":       true,
		"cmd/drover-manager/main.go":    true,
		"test/e2e/tapp_test.go":         true,
		"docs/tapp.md":                  true,
		"docs/design/controller-kit.md": true,
		"README.md":                     true,
		"config/samples/README.md":      true,
		"Makefile":                      true,
		"hack/tools/k8s/tools.go":       false,
		"hack/outsiderefs/main.go":      true,
		"hack/outsiderefs/main_test.go": true,
		"hack/verify.sh":                false,
		"config/samples/tapp.yaml":      false,
		"docs/diagram.svg":              false,
		"api/README.md":                 false,
		".golangci.yml":                 false,
	}
	for p, want := range cases {
		if got := selected(p); got != want {
			t.Errorf("selected(%q) = %v, want %v", p, got, want)
		}
	}
}
