package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// A template is built from an object whose templated parts hold placeholders: the object is marshalled to
// YAML, braces coming from the sources are escaped, and each placeholder is replaced by its template action.
// Three kinds of placeholder:
//
//   - Scalar, a value: `key: {{ expr }}`;
//   - Block, the value of a key, a YAML map expr renders: `key: {{- expr | nindent N }}`;
//   - Line, a key (with any value) of a map whose whole line becomes the YAML expr renders, if it renders
//     any: `{{- with expr }}{{ . | nindent N }}{{- end }}`. expr renders column-0 YAML ("key: value").
type templ struct {
	actions []action
}

type actionKind int

const (
	scalarAction actionKind = iota
	blockAction
	lineAction
)

type action struct {
	kind actionKind
	expr string
}

// Placeholders never occur in the sources: they are checked for before any is made (checkNoPlaceholder).
const placeholderPrefix = "DROVERCHARTGEN"

var placeholderRE = regexp.MustCompile(placeholderPrefix + `([0-9]+)X`)

func (t *templ) add(kind actionKind, expr string) string {
	t.actions = append(t.actions, action{kind: kind, expr: expr})
	return fmt.Sprintf("%s%dX", placeholderPrefix, len(t.actions)-1)
}

// Scalar returns a placeholder for a value rendered as {{ expr }}.
func (t *templ) Scalar(expr string) string { return t.add(scalarAction, expr) }

// Block returns a placeholder for a map value that expr renders.
func (t *templ) Block(expr string) string { return t.add(blockAction, expr) }

// Line returns a placeholder for a map key whose line is replaced by what expr renders.
func (t *templ) Line(expr string) string { return t.add(lineAction, expr) }

// checkNoPlaceholder fails when source text holds something that looks like a placeholder.
func checkNoPlaceholder(name string, data []byte) error {
	if strings.Contains(string(data), placeholderPrefix) {
		return fmt.Errorf("%s contains %q, chartgen's placeholder prefix", name, placeholderPrefix)
	}
	return nil
}

// braces escapes the template delimiters of source text: a CRD's description may hold "{{nodepool-name}}".
var braces = strings.NewReplacer("{{", "{{`{{`}}", "}}", "{{`}}`}}")

// render marshals obj to YAML and replaces its placeholders by their actions.
func (t *templ) render(obj any) (string, error) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	lines := strings.Split(braces.Replace(string(data)), "\n")
	for i, l := range lines {
		if lines[i], err = t.substitute(l); err != nil {
			return "", err
		}
	}
	return strings.Join(lines, "\n"), nil
}

// substitute replaces the placeholders of one line.
func (t *templ) substitute(line string) (string, error) {
	indent := len(line) - len(strings.TrimLeft(line, " "))
	trimmed := strings.TrimSpace(line)
	var err error
	whole := ""
	out := placeholderRE.ReplaceAllStringFunc(line, func(p string) string {
		i, _ := strconv.Atoi(placeholderRE.FindStringSubmatch(p)[1])
		if i >= len(t.actions) {
			err = fmt.Errorf("unknown placeholder %s", p)
			return p
		}
		switch a := t.actions[i]; a.kind {
		case scalarAction:
			return "{{ " + a.expr + " }}"
		case blockAction:
			if !strings.HasSuffix(trimmed, ": "+p) {
				err = fmt.Errorf("block placeholder not a map value: %q", line)
			}
			return fmt.Sprintf("{{- %s | nindent %d }}", a.expr, indent+2)
		default: // a line placeholder replaces its whole line
			if !strings.HasPrefix(trimmed, p+":") {
				err = fmt.Errorf("line placeholder not a map key: %q", line)
			}
			whole = fmt.Sprintf("%s{{- with %s }}{{ . | nindent %d }}{{- end }}", line[:indent], a.expr, indent)
			return p
		}
	})
	switch {
	case err != nil:
		return "", err
	case whole != "":
		return whole, nil
	}
	return out, nil
}
