package render

// listKey is the key of a list the Kubernetes API declares as a list-map (+listType=map / patchMergeKey),
// with the defaults the API server fills into key fields (a container port's protocol is TCP when unset).
type listKey struct {
	fields   []string
	defaults map[string]any
}

// keyedLists maps a field name to its list keys, for the lists that appear in Deployment and StatefulSet
// objects. Lists not named here (tolerations, args, command, node selector terms, match expressions,
// volume claim templates, …) are atomic and compared element-wise.
var keyedLists = map[string]listKey{
	"containers":                {fields: []string{"name"}},
	"initContainers":            {fields: []string{"name"}},
	"ephemeralContainers":       {fields: []string{"name"}},
	"env":                       {fields: []string{"name"}},
	"volumes":                   {fields: []string{"name"}},
	"volumeMounts":              {fields: []string{"mountPath"}},
	"volumeDevices":             {fields: []string{"devicePath"}},
	"ports":                     {fields: []string{"containerPort", "protocol"}, defaults: map[string]any{"protocol": "TCP"}},
	"imagePullSecrets":          {fields: []string{"name"}},
	"ownerReferences":           {fields: []string{"uid"}},
	"hostAliases":               {fields: []string{"ip"}},
	"topologySpreadConstraints": {fields: []string{"topologyKey", "whenUnsatisfiable"}},
	"resourceClaims":            {fields: []string{"name"}},
	"schedulingGates":           {fields: []string{"name"}},
	"claims":                    {fields: []string{"name"}},
}

// quantityParents are the fields whose map values are resource quantities, and quantityFields the fields
// that are quantities themselves: those are compared by value, not by spelling.
var (
	quantityParents = map[string]bool{"limits": true, "requests": true, "overhead": true, "capacity": true}
	quantityFields  = map[string]bool{"sizeLimit": true}
)

// keyOf returns the key values of item for k, and false when item is not an object or lacks a key field
// that has no default.
func (k listKey) keyOf(item any) ([]any, bool) {
	m, ok := item.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make([]any, len(k.fields))
	for i, f := range k.fields {
		v, present := m[f]
		if !present || v == nil {
			d, hasDefault := k.defaults[f]
			if !hasDefault {
				return nil, false
			}
			v = d
		}
		out[i] = v
	}
	return out, true
}
