package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	conversionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/conversion/metrics"
)

// ConversionPath is the path of the manager's one conversion webhook: every CRD whose versions the manager
// converts names it in spec.conversion.webhook.clientConfig (hack/registrygen writes the stanza).
const ConversionPath = "/convert"

// The conversion webhook converts the objects of a kind between its versions through the kind's hub: the
// version whose type implements conversion.Hub; every other version's type implements
// conversion.Convertible (ConvertTo and ConvertFrom the hub).
//
// The API server also converts the object of an admission request to the version of a webhook whose rules
// match it only through matchPolicy Equivalent (drover's webhooks name the hub alone), before the API
// server's schema check. So a value of the wrong type or form (`type: 7`, an unparsable time) reaches the
// conversion webhook first, and a conversion that failed on it would make the API server answer 500 instead
// of the 422 with a field path that the schema check or drover's admission webhooks give. Conversion is
// therefore tolerant: the values that do not decode into the source type are taken out at their field paths
// (as the validating handler locates them), the rest is converted, and the values are put back at the same
// paths of the result. Every version of a kind holds a field it shares with another at the same path, so the
// admission webhook and the API server's schema check then see the bad value and answer 422 naming it. A bad
// value put at a path the target version does not have is pruned by the API server, as every unknown field
// of a conversion's result is.

// ServeConversion serves the conversion webhook on mgr's webhook server, for every kind of its scheme.
func ServeConversion(mgr manager.Manager) {
	mgr.GetWebhookServer().Register(ConversionPath, NewConversionHandler(mgr.GetScheme()))
}

// NewConversionHandler returns the handler of ConversionReviews (apiextensions.k8s.io/v1) for the kinds of
// scheme.
func NewConversionHandler(scheme *runtime.Scheme) http.Handler {
	return &converter{scheme: scheme, decoder: serializer.NewCodecFactory(scheme).UniversalDeserializer()}
}

type converter struct {
	scheme  *runtime.Scheme
	decoder runtime.Decoder
	hubs    sync.Map // schema.GroupKind -> schema.GroupVersionKind of its hub
}

func (c *converter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := ctrl.LoggerFrom(r.Context()).WithName("conversion")
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		log.Error(err, "Refusing a conversion request that is not a ConversionReview")
		http.Error(w, "not a ConversionReview with a request", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for i, obj := range req.Objects {
		out, err := c.convertSafely(obj.Raw, req.DesiredAPIVersion)
		if err != nil {
			log.Error(err, "Conversion failed", "uid", req.UID, "object", i, "desiredAPIVersion", req.DesiredAPIVersion)
			resp = &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{
				Status: metav1.StatusFailure, Message: fmt.Sprintf("object %d: %v", i, err)}}
			break
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&review); err != nil {
		log.Error(err, "Writing the conversion response")
	}
}

// convertSafely is convert with a panic turned into an error (and counted, as controller-runtime counts the
// panics of its own conversion webhook).
func (c *converter) convertSafely(raw []byte, desiredAPIVersion string) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			conversionmetrics.WebhookPanics.WithLabelValues().Inc()
			out, err = nil, fmt.Errorf("internal error during conversion: %v", r)
		}
	}()
	return c.convert(raw, desiredAPIVersion)
}

// convert returns the object raw converted to desiredAPIVersion, the values that do not decode carried over
// at their paths.
func (c *converter) convert(raw []byte, desiredAPIVersion string) ([]byte, error) {
	want, err := schema.ParseGroupVersion(desiredAPIVersion)
	if err != nil {
		return nil, fmt.Errorf("desired API version: %w", err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("the object is not a JSON object with apiVersion and kind: %w", err)
	}
	from := tm.GroupVersionKind()
	to := want.WithKind(from.Kind)
	if from.GroupKind() != to.GroupKind() || from.Kind == "" {
		return nil, fmt.Errorf("cannot convert %s %s to %s", tm.APIVersion, tm.Kind, desiredAPIVersion)
	}
	if from == to {
		return raw, nil
	}
	src, err := c.scheme.New(from)
	if err != nil {
		return nil, err
	}
	dst, err := c.scheme.New(to)
	if err != nil {
		return nil, err
	}
	kept, err := c.decodeTolerant(raw, src)
	if err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", from.GroupVersion(), from.Kind, err)
	}
	if err := c.convertTyped(src, dst, from.GroupKind()); err != nil {
		return nil, err
	}
	dst.GetObjectKind().SetGroupVersionKind(to)
	data, err := json.Marshal(dst)
	if err != nil {
		return nil, err
	}
	if len(kept) == 0 {
		return data, nil
	}
	out, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	for _, v := range kept {
		putAt(out, v.steps, v.value)
	}
	return json.Marshal(out)
}

// keptValue is a value that does not decode, with the steps of its field path.
type keptValue struct {
	steps []string
	value any
}

// decodeTolerant decodes raw into obj; when that fails, it takes out the values that do not decode (at the
// field paths locateDecodeErrors gives) and decodes the rest, returning the values taken out.
func (c *converter) decodeTolerant(raw []byte, obj runtime.Object) ([]keptValue, error) {
	_, _, err := c.decoder.Decode(raw, nil, obj)
	if err == nil {
		return nil, nil
	}
	doc, docErr := decodeDocument(raw)
	if docErr != nil {
		return nil, docErr
	}
	errs := locateDecodeErrors(doc, reflect.TypeOf(obj), nil)
	if len(errs) == 0 {
		return nil, errors.New(plainDecodeError(err))
	}
	kept := make([]keptValue, 0, len(errs))
	for _, e := range errs {
		steps := parsePath(e.Field)
		if v, ok := takeAt(doc, steps); ok {
			kept = append(kept, keptValue{steps: steps, value: v})
		}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// The failed decode may have filled part of obj; decode the rest into an empty one.
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.Elem().CanSet() {
		v.Elem().Set(reflect.Zero(v.Elem().Type()))
	}
	if _, _, err := c.decoder.Decode(data, nil, obj); err != nil {
		return nil, errors.New(plainDecodeError(err))
	}
	return kept, nil
}

// convertTyped converts src into dst, directly when one is the hub, else through the hub.
func (c *converter) convertTyped(src, dst runtime.Object, gk schema.GroupKind) error {
	srcHub, srcIsHub := src.(conversion.Hub)
	dstHub, dstIsHub := dst.(conversion.Hub)
	srcConv, srcIsConv := src.(conversion.Convertible)
	dstConv, dstIsConv := dst.(conversion.Convertible)
	switch {
	case srcIsHub && dstIsConv:
		return dstConv.ConvertFrom(srcHub)
	case dstIsHub && srcIsConv:
		return srcConv.ConvertTo(dstHub)
	case srcIsConv && dstIsConv:
		hub, err := c.hub(gk)
		if err != nil {
			return err
		}
		if err := srcConv.ConvertTo(hub); err != nil {
			return fmt.Errorf("converting %T to the hub: %w", src, err)
		}
		if err := dstConv.ConvertFrom(hub); err != nil {
			return fmt.Errorf("converting the hub to %T: %w", dst, err)
		}
		return nil
	default:
		return fmt.Errorf("%T cannot be converted to %T: neither is the hub or convertible", src, dst)
	}
}

// hub returns a new object of the hub version of gk: the one version of the scheme's types of gk that
// implements conversion.Hub.
func (c *converter) hub(gk schema.GroupKind) (conversion.Hub, error) {
	if gvk, ok := c.hubs.Load(gk); ok {
		obj, err := c.scheme.New(gvk.(schema.GroupVersionKind))
		if err != nil {
			return nil, err
		}
		return obj.(conversion.Hub), nil
	}
	var found []schema.GroupVersionKind
	for gvk := range c.scheme.AllKnownTypes() {
		if gvk.GroupKind() != gk {
			continue
		}
		if obj, err := c.scheme.New(gvk); err == nil {
			if _, ok := obj.(conversion.Hub); ok {
				found = append(found, gvk)
			}
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("kind %s has %d hub versions, want exactly one", gk, len(found))
	}
	c.hubs.Store(gk, found[0])
	return c.hub(gk)
}

// decodeDocument decodes a JSON object keeping numbers as written.
func decodeDocument(raw []byte) (map[string]any, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the object is not a JSON object: %w", err)
	}
	if doc == nil {
		return nil, errors.New("the object is null")
	}
	return doc, nil
}

// takeAt removes the value at steps from doc and returns it: a map entry is deleted, a list element becomes
// null (which decodes into anything and keeps the indexes of the other paths).
func takeAt(doc any, steps []string) (any, bool) {
	for i, step := range steps {
		last := i == len(steps)-1
		switch node := doc.(type) {
		case map[string]any:
			v, ok := node[step]
			if !ok {
				return nil, false
			}
			if last {
				delete(node, step)
				return v, true
			}
			doc = v
		case []any:
			idx, err := strconv.Atoi(step)
			if err != nil || idx < 0 || idx >= len(node) {
				return nil, false
			}
			if last {
				v := node[idx]
				node[idx] = nil
				return v, true
			}
			doc = node[idx]
		default:
			return nil, false
		}
	}
	return nil, false
}

// putAt sets the value at steps of doc, creating the objects on the way that the converted object left out
// (an empty map or struct is omitted); a list element is set only where the list has it. It reports whether
// the value was put.
func putAt(doc map[string]any, steps []string, v any) bool {
	var node any = doc
	for i, step := range steps {
		last := i == len(steps)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				n[step] = v
				return true
			}
			next, ok := n[step]
			if !ok || next == nil {
				if _, isIndex := strconv.Atoi(steps[i+1]); isIndex == nil {
					return false
				}
				next = map[string]any{}
				n[step] = next
			}
			node = next
		case []any:
			idx, err := strconv.Atoi(step)
			if err != nil || idx < 0 || idx >= len(n) {
				return false
			}
			if last {
				n[idx] = v
				return true
			}
			node = n[idx]
		default:
			return false
		}
	}
	return false
}
