package webhook

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoController keeps this package what every kind's webhooks share: it (and everything it imports)
// depends on no API's package. Each API's webhooks live in that API's package and import this one, never the
// other way round.
func TestImportsNoController(t *testing.T) {
	allowed := map[string]bool{"internal/webhook": true, "internal/kit": true, "internal/index": true}
	out, err := exec.Command("go", "list", "-deps", "github.com/drover-dev/drover/internal/webhook").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const prefix = "github.com/drover-dev/drover/"
	for pkg := range strings.FieldsSeq(string(out)) {
		rel, ok := strings.CutPrefix(pkg, prefix)
		if !ok || strings.HasPrefix(rel, "api/") {
			continue
		}
		if !allowed[rel] {
			t.Errorf("internal/webhook depends on %s; shared admission code must not depend on an API's package", rel)
		}
	}
}
