package stager

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// hash8 is the first 8 hex digits of the SHA-256 of the preferred name, which end a fallback name.
func hash8(sbp, stage string) string {
	sum := sha256.Sum256([]byte(sbp + ".stage." + stage))
	return hex.EncodeToString(sum[:])[:8]
}

func TestBindingPolicyName(t *testing.T) {
	p30, s26, s27 := strings.Repeat("p", 30), strings.Repeat("s", 26), strings.Repeat("s", 27) // 30+7+26 = 63
	a23, a24, b22 := strings.Repeat("a", 23), strings.Repeat("a", 24), strings.Repeat("b", 22)
	cases := map[string]struct {
		sbp, stage, want string
	}{
		"the workload stager's name when it fits":   {"nginx-staged-bindingpolicy", "dev", "nginx-staged-bindingpolicy.stage.dev"},
		"exactly 63 characters keeps the preferred": {p30, s26, p30 + ".stage." + s26},
		"64 characters falls back":                  {p30, s27, strings.Repeat("p", 24) + ".stage." + strings.Repeat("s", 22) + "-" + hash8(p30, s27)},
		"the longest names": {strings.Repeat("a", 63), strings.Repeat("b", 63),
			a24 + ".stage." + b22 + "-" + hash8(strings.Repeat("a", 63), strings.Repeat("b", 63))},
		"a '-' ending the policy's prefix is trimmed": {a23 + "-cccccccccccccccccccccccccccccccccccccccc", "prod",
			a23 + ".stage.prod-" + hash8(a23+"-cccccccccccccccccccccccccccccccccccccccc", "prod")},
		"a '.' ending the policy's prefix is trimmed": {a23 + "." + strings.Repeat("c", 40), "prod",
			a23 + ".stage.prod-" + hash8(a23+"."+strings.Repeat("c", 40), "prod")},
		"'-' and '.' ending the prefix of an invalid policy name are trimmed": {"a" + strings.Repeat("-", 22) + "-.c" + strings.Repeat("c", 40), "prod",
			"a.stage.prod-" + hash8("a"+strings.Repeat("-", 22)+"-.c"+strings.Repeat("c", 40), "prod")},
		"'-' ending the stage's prefix is trimmed": {strings.Repeat("a", 40), "b" + strings.Repeat("-", 21) + "dddd",
			a24 + ".stage.b-" + hash8(strings.Repeat("a", 40), "b"+strings.Repeat("-", 21)+"dddd")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BindingPolicyName(tc.sbp, tc.stage)
			if got != tc.want {
				t.Errorf("BindingPolicyName(%q, %q) = %q, want %q", tc.sbp, tc.stage, got, tc.want)
			}
			if len(got) > MaxBindingPolicyNameLength {
				t.Errorf("%q has %d characters, more than %d", got, len(got), MaxBindingPolicyNameLength)
			}
			for _, msg := range append(validation.IsValidLabelValue(got), validation.IsDNS1123Subdomain(got)...) {
				t.Errorf("%q is not a valid label value and object name: %s", got, msg)
			}
			if strings.Contains(got, "-.") || strings.Contains(got, ".-") || strings.Contains(got, "..") {
				t.Errorf("%q joins separators", got)
			}
		})
	}
}

// Two long names that share their beginnings get different BindingPolicy names; so do the stages of one
// long policy.
func TestBindingPolicyNameFallbacksDoNotCollide(t *testing.T) {
	base := strings.Repeat("x", 40)
	seen := map[string]string{}
	for _, pair := range [][2]string{
		{base + "-one", "production"}, {base + "-two", "production"},
		{base, strings.Repeat("s", 30) + "a"}, {base, strings.Repeat("s", 30) + "b"},
	} {
		got := BindingPolicyName(pair[0], pair[1])
		key := pair[0] + "/" + pair[1]
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s both get %q", other, key, got)
		}
		seen[got] = key
	}
}
