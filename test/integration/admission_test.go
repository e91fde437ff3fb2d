package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// These specs send raw JSON, which the typed client cannot encode, through the API server to drover's
// webhooks: a value of the wrong type or form must come back as a 422 with the field path of the value,
// whether the API server's schema check or drover's validating webhook finds it, never as a 400 with Go
// decoder text.
var _ = Describe("Admission of values of the wrong type", func() {
	const ns = "default"
	var seq int
	name := func(prefix string) string {
		seq++
		return fmt.Sprintf("%s-%d", prefix, seq)
	}
	tappPath := "/apis/apps.tkestack.io/v1/namespaces/" + ns + "/tapps"
	yadPath := "/apis/apps.openyurt.io/v1alpha1/namespaces/" + ns + "/yurtappdaemons"
	poolPath := "/apis/apps.openyurt.io/v1beta1/nodepools"

	tapp := func(n, spec string) string {
		return `{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"` + n + `"},"spec":` + spec + `}`
	}
	tappSpec := func(extra string) string {
		return `{` + extra + `"replicas":1,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}`
	}

	It("answers a TApp's fractional replicas with the API server's 422, not a 400 from defaulting", func() {
		code, status := postRaw(tappPath, tapp(name("tapp"), `{"replicas":1.5,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}`))
		Expect(code).To(Equal(http.StatusUnprocessableEntity), "status %v", status)
		Expect(statusFields(status)).To(ContainElement("spec.replicas"))
		Expect(status.Message).NotTo(ContainSubstring("Go struct"))
	})

	It("answers a TApp's budget that the schema lets through with a 422 at its field", func() {
		code, status := postRaw(tappPath, tapp(name("tapp"), tappSpec(`"updateStrategy":{"maxUnavailable":"abc%"},`)))
		Expect(code).To(Equal(http.StatusUnprocessableEntity), "status %v", status)
		Expect(statusFields(status)).To(ContainElement("spec.updateStrategy.maxUnavailable"))
	})

	It("admits a create whose status the types cannot hold, and discards the status", func() {
		n := name("tapp")
		code, status := postRaw(tappPath, strings.TrimSuffix(tapp(n, tappSpec("")), "}")+`,"status":"x"}`)
		Expect(code).To(Equal(http.StatusCreated), "status %v", status)
	})

	It("answers a bad quantity in a YurtAppDaemon template, which has no schema, with the field path", func() {
		body := `{"apiVersion":"apps.openyurt.io/v1alpha1","kind":"YurtAppDaemon","metadata":{"name":"` + name("yad") + `"},
			"spec":{"selector":{"matchLabels":{"app":"a"}},"nodepoolSelector":{"matchLabels":{"x":"y"}},
			"workloadTemplate":{"deploymentTemplate":{"metadata":{"labels":{"app":"a"}},"spec":{"selector":{"matchLabels":{"app":"a"}},
			"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx",
			"resources":{"requests":{"cpu":"abc"}}}]}}}}}}}`
		code, status := postRaw(yadPath, body)
		Expect(code).To(Equal(http.StatusUnprocessableEntity), "status %v", status)
		Expect(statusFields(status)).To(ContainElement(
			"spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].resources.requests[cpu]"))
	})

	It("answers a NodePool taint's unparsable time and a number for its type with field paths", func() {
		body := `{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"` + name("pool") + `"},
			"spec":{"type":7,"taints":[{"key":"k","effect":"NoSchedule","timeAdded":"yesterday"}]}}`
		code, status := postRaw(poolPath, body)
		Expect(code).To(Equal(http.StatusUnprocessableEntity), "status %v", status)
		Expect(statusFields(status)).To(ContainElements("spec.type", "spec.taints[0].timeAdded"))
	})
})

// postRaw sends body to the API server as a create at path and returns the response code and status (nil
// when the answer is not a Status).
func postRaw(path, body string) (int, *metav1.Status) {
	GinkgoHelper()
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, strings.TrimSuffix(cfg.Host, "/")+path, bytes.NewBufferString(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	status := &metav1.Status{}
	if json.Unmarshal(raw, status) != nil || status.Kind != "Status" {
		status = nil
	}
	return resp.StatusCode, status
}

// statusFields returns the field paths of the causes of status.
func statusFields(status *metav1.Status) []string {
	var fields []string
	if status != nil && status.Details != nil {
		for _, c := range status.Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return fields
}
