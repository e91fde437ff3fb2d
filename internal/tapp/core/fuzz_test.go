package core

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// fuzzPod decodes 4 bytes into a pod state for id.
func fuzzPod(p *Pass, id int, b []byte) *corev1.Pod {
	phases := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, ""}
	conds := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown, ""}
	tpl, ok := p.Template(id)
	if !ok {
		tpl = &Template{Spec: &corev1.PodTemplateSpec{}}
	}
	pod := NewPod(p.App, id, tpl)
	pod.Spec.NodeName = []string{"", "node-1", "node-2"}[int(b[0])%3]
	pod.Status.Phase = phases[int(b[0]>>2)%len(phases)]
	if b[0]&0x80 != 0 {
		pod.DeletionTimestamp = &mt0
	}
	if c := conds[int(b[1])%len(conds)]; c != "" {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: c, LastTransitionTime: mt0})
	}
	if c := conds[int(b[1]>>2)%len(conds)]; c != "" {
		pod.Status.Conditions = append(pod.Status.Conditions, NewGateCondition(c, t0.Add(time.Duration(b[3])*time.Second)))
	}
	switch b[2] % 5 {
	case 1:
		pod.Labels[tkestackv1.TAppHashKey] = "v1-0000000000000000"
	case 2:
		pod.Labels[tkestackv1.TAppHashKey] = "12345"
		pod.Labels[tkestackv1.TAppUniqHashKey] = "x"
	case 3:
		delete(pod.Labels, tkestackv1.TAppHashKey)
	case 4:
		pod.Labels[tkestackv1.TAppUniqHashKey] = ""
		pod.Labels[tkestackv1.TAppHashKey] = "v1-0000000000000001"
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	switch (b[2] >> 3) % 4 {
	case 1:
		pod.Annotations[tkestackv1.InPlaceUpdateStateKey] = "true"
	case 2:
		pod.Annotations[tkestackv1.InPlaceUpdateRecordKey] = `{"containers":[{"name":"nginx","image":"nginx:9"}]}`
	case 3:
		pod.Annotations[tkestackv1.InPlaceUpdateRecordKey] = string(b)
	}
	for i, c := range pod.Spec.Containers {
		if b[3]&1 != 0 {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: string(b[i%4 : i%4+1])})
		}
	}
	return pod
}

func fuzzApp(replicas uint8, statuses, templates, prev string, budget string, flags uint8) *tkestackv1.TApp {
	app := newApp(int32(replicas)%40).Pool("a", tplWith(newImage)).Pool("b", tplWith("nginx:bad image")).Obj()
	_ = json.Unmarshal([]byte(statuses), &app.Spec.Statuses)
	_ = json.Unmarshal([]byte(templates), &app.Spec.Templates)
	_ = json.Unmarshal([]byte(prev), &app.Status.Statuses)
	mu := intstr.Parse(budget)
	app.Spec.UpdateStrategy.MaxUnavailable = &mu
	app.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = &mu
	app.Spec.UpdateStrategy.Paused = flags&1 != 0
	app.Spec.ForceDeletePod = flags&2 != 0
	app.Spec.NeverMigrate = flags&4 != 0
	if flags&8 != 0 {
		app.Spec.Selector = nil
	}
	if flags&16 != 0 {
		app.Status.AppStatus = tkestackv1.AppSucc
	}
	if flags&32 != 0 {
		app.Spec.UpdateStrategy.Template = "a"
	}
	if flags&64 != 0 {
		app.Spec.Template.Labels = nil
	}
	app.Spec.MinReadySeconds = int32(flags >> 7)
	return app
}

// FuzzPlan: planning and status derivation never panic and keep their invariants on arbitrary statuses,
// templates, budgets and pod states. The seed corpus runs in every `go test`.
func FuzzPlan(f *testing.F) {
	f.Add(uint8(3), `{"1":"Killed"}`, `{"0":"a"}`, `{"2":"Succ"}`, "1", uint8(0), []byte{0x05, 0x00, 0x01, 0x01, 0x05, 0x05, 0x00, 0x00})
	f.Add(uint8(5), `{"01":"Killed","x":"Bogus"}`, `{"3":"missing","-1":"a"}`, `{"0":"Failed","9":"Killed"}`, "50%", uint8(0x13), []byte{0x82, 0x09, 0x12, 0x03})
	f.Add(uint8(0), `null`, `{}`, `[]`, "0%", uint8(0xff), []byte{})
	f.Add(uint8(10), `{"4":"Running"}`, `{"1":"b","2":"a"}`, `{}`, "abc", uint8(0x48), []byte{0x01, 0x05, 0x1a, 0xff, 0x09, 0x06, 0x0b, 0x00, 0x11, 0x04, 0x02, 0x01})
	f.Add(uint8(2), ``, ``, ``, "-3", uint8(0x24), []byte{0x0c, 0x10, 0x03, 0x00, 0x0c, 0x01, 0x04, 0x01})
	f.Fuzz(func(t *testing.T, replicas uint8, statuses, templates, prev, budget string, flags uint8, podBytes []byte) {
		app := fuzzApp(replicas, statuses, templates, prev, budget, flags)
		p := NewPass(app, Options{DeletePodAfterAppFinish: flags&2 == 0})
		pods := Pods{}
		for i := 0; i+4 <= len(podBytes) && i < 4*64; i += 4 {
			id := int(podBytes[i+3]) % 48
			pods[id] = fuzzPod(p, id, podBytes[i:i+4])
		}
		obs := Observation{Pods: pods, Now: t0.Add(time.Minute), Expecting: map[int]bool{1: flags&64 != 0}, Nodes: map[string]*corev1.Node{}}
		plan := p.Plan(obs)
		checkPlan(t, p, plan, obs)
		status, _ := p.Status(obs, plan.Issues)
		for id := range status.Statuses {
			if _, ok := tkestackv1.ParseInstanceID(id); !ok {
				t.Fatalf("non-canonical status key %q", id)
			}
		}
		if !slices.Contains([]tkestackv1.AppStatus{"Pending", "Running", "Failed", "Succ", "Killed"}, status.AppStatus) {
			t.Fatalf("app status %q", status.AppStatus)
		}
		if int(status.AvailableReplicas) > p.Desired.Count() || int(status.UpdatedReplicas) > p.Desired.Count() {
			t.Fatalf("counters above D: %+v", status)
		}
	})
}

func checkPlan(t *testing.T, p *Pass, plan *Plan, obs Observation) {
	t.Helper()
	for i, a := range plan.Actions {
		if i > 0 && plan.Actions[i-1].ID >= a.ID {
			t.Fatalf("actions not strictly ascending at %d", a.ID)
		}
		hasPod := obs.Pods[a.ID] != nil
		switch a.Action {
		case ActionCreate:
			if hasPod || a.Desired == nil || a.Class != ClassRunning {
				t.Fatalf("bad create of %d", a.ID)
			}
		case ActionDelete, ActionRecreate, ActionForceDelete, ActionUpdate, ActionRestamp, ActionWait:
			if !hasPod {
				t.Fatalf("%s of %d without a pod", a.Action, a.ID)
			}
		}
		if a.Action != ActionNone && a.Action != ActionWait && (p.Settings.Blocked || obs.Expecting[a.ID]) {
			t.Fatalf("write %s for %d although blocked or pending", a.Action, a.ID)
		}
		if p.Settings.Paused && (a.Action == ActionUpdate || a.Action == ActionRecreate) {
			t.Fatalf("update of %d while paused", a.ID)
		}
		if a.Gate.Write && (a.Action == ActionDelete || a.Action == ActionRecreate || (a.Action == ActionUpdate && a.InPlace)) {
			t.Fatalf("gate write for %d with %s", a.ID, a.Action)
		}
	}
	// Budget: available pods taken never push |A| below D − budget (both paths, force first).
	taken := 0
	available := p.availableSet(&obs)
	for _, id := range plan.Budget.Scheduled {
		if available[id] {
			taken++
		}
	}
	if maxBudget := max(plan.Budget.Force, plan.Budget.Rolling); taken > 0 && len(available)-taken < plan.Budget.D-maxBudget {
		t.Fatalf("budget exceeded: |A|=%d taken=%d D=%d budgets %d/%d", len(available), taken, plan.Budget.D, plan.Budget.Force, plan.Budget.Rolling)
	}
}

// FuzzTemplateHash: any template that decodes hashes without error, and identically after a JSON round trip.
func FuzzTemplateHash(f *testing.F) {
	f.Add([]byte(`{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"0.5"}}}]}}`))
	f.Add([]byte(`{"spec":{"initContainers":[{"name":"s","image":"e","restartPolicy":"Always"}],"volumes":[{"name":"v"}]}}`))
	f.Add([]byte(`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"protocol":"TCP","hostPort":80}]}],"hostNetwork":true}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tpl corev1.PodTemplateSpec
		if json.Unmarshal(data, &tpl) != nil {
			return
		}
		h1, err1 := templateHash(&tpl)
		u1, err2 := uniqHash(&tpl)
		if err1 != nil || err2 != nil {
			t.Fatalf("hash errors: %v %v", err1, err2)
		}
		raw, err := json.Marshal(&tpl)
		if err != nil {
			t.Fatal(err)
		}
		var again corev1.PodTemplateSpec
		if err := json.Unmarshal(raw, &again); err != nil {
			t.Fatal(err)
		}
		h2, _ := templateHash(&again)
		u2, _ := uniqHash(&again)
		if h1 != h2 || u1 != u2 {
			t.Fatalf("hash changed across a round trip: %s/%s vs %s/%s", h1, u1, h2, u2)
		}
	})
}
