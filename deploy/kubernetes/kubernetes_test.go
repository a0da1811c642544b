package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml"
)

// study is the study the tests render the templates for.
var study = Study{Name: "baselines", Manifest: "baselines.yaml", Shards: 4, Image: "registry.example/stress:test", StorageClass: "nfs"}

// The objects of the templates, with every field they set and no other:
// decoded strictly, a misspelled or misplaced field is an error.
type (
	// Object is exported: the decoder sets only exported embedded types.
	Object struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Metadata   metadata `yaml:"metadata"`
	}
	metadata struct {
		Name string `yaml:"name"`
	}
	claim struct {
		Object `yaml:",inline"`
		Spec   struct {
			AccessModes      []string `yaml:"accessModes"`
			StorageClassName string   `yaml:"storageClassName"`
			Resources        struct {
				Requests map[string]string `yaml:"requests"`
			} `yaml:"resources"`
		} `yaml:"spec"`
	}
	job struct {
		Object `yaml:",inline"`
		Spec   struct {
			CompletionMode       string `yaml:"completionMode"`
			Completions          *int   `yaml:"completions"`
			Parallelism          *int   `yaml:"parallelism"`
			BackoffLimit         *int   `yaml:"backoffLimit"`
			BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
			PodReplacementPolicy string `yaml:"podReplacementPolicy"`
			Template             struct {
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	podSpec struct {
		RestartPolicy                 string      `yaml:"restartPolicy"`
		TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
		Containers                    []container `yaml:"containers"`
		Volumes                       []volume    `yaml:"volumes"`
	}
	container struct {
		Name         string   `yaml:"name"`
		Image        string   `yaml:"image"`
		Command      []string `yaml:"command"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	volume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	}
)

// documents splits a rendered file into its YAML documents, each decoded
// into a generic value.
func documents(t *testing.T, text string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("decoding the rendered template: %v", err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// decodeStrict decodes one document into v, refusing fields v lacks.
func decodeStrict(t *testing.T, doc map[string]any, v any) {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalWithOptions(b, v, yaml.Strict()); err != nil {
		t.Fatalf("%s %s: %v", doc["kind"], name(doc), err)
	}
}

// name returns a document's metadata.name.
func name(doc map[string]any) string {
	m, _ := doc["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// render renders tmpl for study.
func render(t *testing.T, tmpl string) string {
	t.Helper()
	out, err := Render(tmpl, study)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// parsed is the rendered templates, decoded.
type parsed struct {
	claim        claim
	shards, merg job
}

func parse(t *testing.T) parsed {
	t.Helper()
	var p parsed
	docs := documents(t, render(t, Shards))
	if len(docs) != 2 || docs[0]["kind"] != "PersistentVolumeClaim" || docs[1]["kind"] != "Job" {
		t.Fatalf("shards.yaml: want a PersistentVolumeClaim and a Job, got %d documents: %v", len(docs), docs)
	}
	decodeStrict(t, docs[0], &p.claim)
	decodeStrict(t, docs[1], &p.shards)
	docs = documents(t, render(t, Merge))
	if len(docs) != 1 || docs[0]["kind"] != "Job" {
		t.Fatalf("merge.yaml: want one Job, got %d documents: %v", len(docs), docs)
	}
	decodeStrict(t, docs[0], &p.merg)
	return p
}

// only returns a Job's one container.
func only(t *testing.T, j job) container {
	t.Helper()
	if n := len(j.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("Job %s: want one container, got %d", j.Metadata.Name, n)
	}
	return j.Spec.Template.Spec.Containers[0]
}

// script returns the sh -c script a container runs.
func script(t *testing.T, c container) string {
	t.Helper()
	if len(c.Command) != 3 || c.Command[0] != "sh" || c.Command[1] != "-c" {
		t.Fatalf("container %s: want the command sh -c SCRIPT, got %q", c.Name, c.Command)
	}
	return c.Command[2]
}

// mounts returns where a Job's container mounts each volume, by the
// volume's source: "pvc:NAME" or "configmap:NAME".
func mounts(t *testing.T, j job) map[string]string {
	t.Helper()
	source := map[string]string{}
	for _, v := range j.Spec.Template.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			source[v.Name] = "pvc:" + v.PersistentVolumeClaim.ClaimName
		case v.ConfigMap != nil:
			source[v.Name] = "configmap:" + v.ConfigMap.Name
		}
	}
	out := map[string]string{}
	for _, m := range only(t, j).VolumeMounts {
		s, ok := source[m.Name]
		if !ok {
			t.Fatalf("Job %s mounts volume %q, which it does not define", j.Metadata.Name, m.Name)
		}
		out[s] = m.MountPath
	}
	return out
}

// show prints an optional number.
func show(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// TestStructure checks the rendered manifests' fields: the shared
// ReadWriteMany claim, the Indexed Job of N shards, each retried on its
// own and replaced only once stopped, the merge Job on the same volume,
// and the images.
func TestStructure(t *testing.T) {
	p := parse(t)
	n := study.Shards

	c := p.claim
	if c.APIVersion != "v1" || !slices.Equal(c.Spec.AccessModes, []string{"ReadWriteMany"}) || c.Spec.StorageClassName != study.StorageClass || c.Spec.Resources.Requests["storage"] == "" {
		t.Errorf("claim: want v1, ReadWriteMany only, storage class %s and a size, got %+v", study.StorageClass, c)
	}

	s := p.shards
	if s.APIVersion != "batch/v1" || s.Metadata.Name != "stress-baselines-shards" {
		t.Errorf("shards Job: want batch/v1 stress-baselines-shards, got %s %s", s.APIVersion, s.Metadata.Name)
	}
	if s.Spec.CompletionMode != "Indexed" {
		t.Errorf("shards Job: completionMode %q, want Indexed", s.Spec.CompletionMode)
	}
	if s.Spec.Completions == nil || *s.Spec.Completions != n || s.Spec.Parallelism == nil || *s.Spec.Parallelism != n {
		t.Errorf("shards Job: want completions = parallelism = %d, got %s and %s", n, show(s.Spec.Completions), show(s.Spec.Parallelism))
	}
	if s.Spec.BackoffLimitPerIndex == nil || *s.Spec.BackoffLimitPerIndex < 1 || s.Spec.BackoffLimit != nil {
		t.Errorf("shards Job: want backoffLimitPerIndex at least 1 and no backoffLimit, got %s and %s", show(s.Spec.BackoffLimitPerIndex), show(s.Spec.BackoffLimit))
	}
	if s.Spec.PodReplacementPolicy != "Failed" {
		t.Errorf("shards Job: podReplacementPolicy %q, want Failed (two pods of an index must not write its bundle at once)", s.Spec.PodReplacementPolicy)
	}
	if g := s.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g <= 30 {
		t.Errorf("shards Job: terminationGracePeriodSeconds %s, want more than stress run's -grace of 30s", show(g))
	}

	m := p.merg
	if m.APIVersion != "batch/v1" || m.Metadata.Name != "stress-baselines-merge" || m.Spec.CompletionMode != "" || m.Spec.Completions != nil {
		t.Errorf("merge Job: want a plain batch/v1 Job stress-baselines-merge, got %+v", m)
	}
	if m.Spec.BackoffLimit == nil || *m.Spec.BackoffLimit != 0 {
		t.Errorf("merge Job: backoffLimit %s, want 0", show(m.Spec.BackoffLimit))
	}

	for _, j := range []job{s, m} {
		if j.Spec.Template.Spec.RestartPolicy != "Never" {
			t.Errorf("Job %s: restartPolicy %q, want Never", j.Metadata.Name, j.Spec.Template.Spec.RestartPolicy)
		}
		if c := only(t, j); c.Image != study.Image {
			t.Errorf("Job %s: image %q, want %q", j.Metadata.Name, c.Image, study.Image)
		}
	}

	// The two Jobs mount the claim at the same place; the shards' Job
	// also mounts the study's ConfigMap where its command reads the
	// manifest.
	pvc := "pvc:" + c.Metadata.Name
	sm, mm := mounts(t, s), mounts(t, m)
	if sm[pvc] != "/bundles" || mm[pvc] != "/bundles" || len(mm) != 1 {
		t.Errorf("the Jobs must mount claim %s at /bundles: shards %v, merge %v", c.Metadata.Name, sm, mm)
	}
	if sm["configmap:baselines-manifest"] != "/manifests" || len(sm) != 2 {
		t.Errorf("shards Job: want ConfigMap baselines-manifest at /manifests, got %v", sm)
	}

	for _, want := range []string{
		`dir=/bundles/baselines/shard-${JOB_COMPLETION_INDEX:?`,
		`exec stress run -shard auto -shards 4 -out "$dir" /manifests/baselines.yaml`,
		`exec stress run -resume "$dir" /manifests/baselines.yaml`,
	} {
		if !strings.Contains(script(t, only(t, s)), want) {
			t.Errorf("shards Job: the script lacks %q:\n%s", want, script(t, only(t, s)))
		}
	}
	merge := strings.Fields(script(t, only(t, m)))
	if len(merge) != 6 || strings.Join(merge[:5], " ") != "exec stress merge -out /bundles/baselines/merged" {
		t.Fatalf("merge Job: want exec stress merge -out /bundles/baselines/merged SHARDS, got %q", merge)
	}
	for k := range n {
		if ok, _ := path.Match(merge[5], "/bundles/baselines/shard-"+strconv.Itoa(k)); !ok {
			t.Errorf("merge Job: %s does not name shard %d's bundle /bundles/baselines/shard-%d", merge[5], k+1, k)
		}
	}
}

// TestRender checks that Render fills every placeholder and refuses a
// study the manifests cannot carry.
func TestRender(t *testing.T) {
	for _, tmpl := range []struct{ name, text string }{{"shards", Shards}, {"merge", Merge}} {
		t.Run(tmpl.name+" fills every placeholder", func(t *testing.T) {
			out := render(t, tmpl.text)
			if strings.Contains(out, "__") {
				t.Errorf("a placeholder is left:\n%s", out)
			}
		})
	}
	for _, tc := range []struct {
		name string
		bad  Study
	}{
		{"refuses an uppercase name", Study{Name: "Baselines", Manifest: "m.yaml", Shards: 4, Image: "i", StorageClass: "nfs"}},
		{"refuses an underscore in the name", Study{Name: "a_b", Manifest: "m.yaml", Shards: 4, Image: "i", StorageClass: "nfs"}},
		{"refuses a name too long for the Jobs' names", Study{Name: strings.Repeat("a", 50), Manifest: "m.yaml", Shards: 4, Image: "i", StorageClass: "nfs"}},
		{"refuses a manifest in a directory", Study{Name: "b", Manifest: "dir/m.yaml", Shards: 4, Image: "i", StorageClass: "nfs"}},
		{"refuses zero shards", Study{Name: "b", Manifest: "m.yaml", Shards: 0, Image: "i", StorageClass: "nfs"}},
		{"refuses a missing image", Study{Name: "b", Manifest: "m.yaml", Shards: 4, StorageClass: "nfs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Render(Shards, tc.bad); err == nil {
				t.Errorf("Render accepted %+v", tc.bad)
			}
		})
	}
	if _, err := Render(Shards+"\n# __NEW__\n", study); err == nil || !strings.Contains(err.Error(), "__NEW__") {
		t.Errorf("Render with an unknown placeholder: %v, want an error naming it", err)
	}
}

// TestScripts runs the Jobs' sh -c scripts with a stand-in stress that
// records its arguments, the bundles' directory moved under a temporary
// one: a pod's first run starts shard k+1 of N, a restarted pod resumes
// its bundle, one killed before its manifest.json was written starts
// again, a pod outside an Indexed Job fails, and the merge names the N
// shards' bundles.
func TestScripts(t *testing.T) {
	p := parse(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	log := filepath.Join(tmp, "log")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\nprintf '%s\\n' \"$*\" >\"$STRESS_LOG\"\n"
	if err := os.WriteFile(filepath.Join(bin, "stress"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	bundles := filepath.Join(tmp, "bundles")
	run := func(script string, env ...string) (string, error) {
		t.Helper()
		os.Remove(log)
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(script, "/bundles/", bundles+"/"))
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "STRESS_LOG=" + log}, env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
		b, err := os.ReadFile(log)
		return strings.TrimSpace(strings.ReplaceAll(string(b), bundles, "/bundles")), err
	}
	shard := script(t, only(t, p.shards))
	dir := filepath.Join(bundles, "baselines", "shard-2")

	got, err := run(shard, "JOB_COMPLETION_INDEX=2")
	if want := "run -shard auto -shards 4 -out /bundles/baselines/shard-2 /manifests/baselines.yaml"; err != nil || got != want {
		t.Errorf("first run of index 2: got %q (%v), want stress %s", got, err, want)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = run(shard, "JOB_COMPLETION_INDEX=2")
	if want := "run -resume /bundles/baselines/shard-2 /manifests/baselines.yaml"; err != nil || got != want {
		t.Errorf("index 2 restarted: got %q (%v), want stress %s", got, err, want)
	}
	if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "calls.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = run(shard, "JOB_COMPLETION_INDEX=2")
	if _, serr := os.Stat(dir); !strings.Contains(got, "-out /bundles/baselines/shard-2 ") || !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("index 2 restarted before its manifest.json: got %q (%v), want a new run with its directory removed (%v)", got, err, serr)
	}
	if got, err := run(shard); err == nil {
		t.Errorf("without JOB_COMPLETION_INDEX the script ran stress %q", got)
	}

	want := []string{"merge", "-out", "/bundles/baselines/merged"}
	for k := range study.Shards {
		d := filepath.Join(bundles, "baselines", "shard-"+strconv.Itoa(k))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		want = append(want, "/bundles/baselines/shard-"+strconv.Itoa(k))
	}
	got, err = run(script(t, only(t, p.merg)))
	if err != nil || got != strings.Join(want, " ") {
		t.Errorf("merge: got stress %q (%v), want stress %s", got, err, strings.Join(want, " "))
	}
}

// kubectlPath returns the kubectl to run: $KUBECTL, else kubectl on the
// PATH. Without one the test skips, except under CI=true, where it fails
// (.ci/run installs one).
func kubectlPath(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kubectl is missing (.ci/run installs it): %v", err)
		}
		t.Skipf("kubectl is missing (.ci/run installs it): %v", err)
	}
	return k
}

// kubectl runs kubectl with args and no cluster: KUBECONFIG is an empty
// file and HOME (the discovery cache) a temporary directory. It returns
// stdout.
func kubectl(t *testing.T, bin string, stdin string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	config := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "KUBECONFIG" && k != "HOME" && !strings.HasPrefix(k, "KUBERNETES_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+config, "HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// discovery serves the API discovery documents kubectl reads to map the
// manifests' kinds to resources (core/v1 persistentvolumeclaims and
// configmaps, batch/v1 jobs) and records the requests it gets. It is no
// API server: every other request gets 404.
func discovery(t *testing.T) (url string, requests func() []string) {
	t.Helper()
	resource := func(name, kind string) map[string]any {
		return map[string]any{"name": name, "singularName": strings.ToLower(kind), "namespaced": true, "kind": kind, "verbs": []string{"create", "get", "list", "delete"}}
	}
	version := map[string]string{"groupVersion": "batch/v1", "version": "v1"}
	docs := map[string]any{
		"/api":  map[string]any{"kind": "APIVersions", "versions": []string{"v1"}, "serverAddressByClientCIDRs": []any{}},
		"/apis": map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{map[string]any{"name": "batch", "versions": []any{version}, "preferredVersion": version}}},
		"/api/v1": map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
			resource("persistentvolumeclaims", "PersistentVolumeClaim"), resource("configmaps", "ConfigMap")}},
		"/apis/batch/v1": map[string]any{"kind": "APIResourceList", "groupVersion": "batch/v1", "resources": []any{resource("jobs", "Job")}},
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		doc, ok := docs[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestKubectlDryRun gives the rendered manifests to the real kubectl's
// client-side dry run (kubectl create --dry-run=client -o yaml
// --validate=false -f FILE), which parses them and maps each kind to its
// resource, and checks that it prints the objects as given. No cluster
// is involved: KUBECONFIG is an empty file, and kubectl, which must read
// the API discovery documents even for a client-side dry run (without
// them it fails with "unable to recognize" the kinds), reads them from
// the test's own stub on 127.0.0.1; the test checks that kubectl sent
// it nothing but discovery GETs. Schema validation (--validate=true)
// would need the server's OpenAPI documents; TestKubectlTypes stands in
// for it.
func TestKubectlDryRun(t *testing.T) {
	bin := kubectlPath(t)
	url, requests := discovery(t)
	dir := t.TempDir()
	for _, tmpl := range []struct{ file, text string }{{"shards.yaml", Shards}, {"merge.yaml", Merge}} {
		t.Run(tmpl.file+" round-trips through kubectl create", func(t *testing.T) {
			text := render(t, tmpl.text)
			file := filepath.Join(dir, tmpl.file)
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := kubectl(t, bin, "", "create", "--dry-run=client", "-o", "yaml", "--validate=false", "--server", url, "-f", file)
			if err != nil {
				t.Fatal(err)
			}
			got, want := documents(t, out), documents(t, text)
			for _, doc := range got { // the namespace of the empty configuration
				if m, _ := doc["metadata"].(map[string]any); m["namespace"] == "default" {
					delete(m, "namespace")
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: kubectl's dry run printed\n%s\nwant the rendered objects:\n%s", tmpl.file, out, text)
			}
		})
	}
	reqs := requests()
	for _, r := range reqs {
		if !slices.Contains([]string{"GET /version", "GET /api", "GET /apis", "GET /api/v1", "GET /apis/batch/v1"}, r) {
			t.Errorf("kubectl sent the discovery stub %s", r)
		}
	}
	t.Logf("kubectl's requests: %q", reqs)
}

// TestKubectlTypes decodes each rendered Job into kubectl's own Go type
// of a batch/v1 Job (kubectl set env --local, which needs no server and
// decodes into the typed object, unlike create) and checks that every
// field survives: the decoding refuses a value of the wrong type and
// drops a field the type does not have, so a misspelled or misplaced
// field is caught. It needs kubectl 1.28 or later, whose Job type has
// backoffLimitPerIndex and podReplacementPolicy.
func TestKubectlTypes(t *testing.T) {
	bin := kubectlPath(t)
	out, err := kubectl(t, bin, "", "version", "--client", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ClientVersion struct{ Major, Minor, GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	if minor, _ := strconv.Atoi(strings.TrimRight(v.ClientVersion.Minor, "+")); v.ClientVersion.Major == "1" && minor < 28 {
		t.Skipf("kubectl %s: its Job type predates backoffLimitPerIndex (1.28)", v.ClientVersion.GitVersion)
	}
	for _, tmpl := range []string{Shards, Merge} {
		for _, doc := range documents(t, render(t, tmpl)) {
			if doc["kind"] != "Job" {
				continue
			}
			t.Run("Job "+name(doc)+" keeps every field in kubectl's type", func(t *testing.T) {
				in, err := yaml.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				out, err := kubectl(t, bin, string(in), "set", "env", "--local", "-o", "yaml", "-f", "-", "STRESS_TYPE_CHECK=1")
				if err != nil {
					t.Fatal(err)
				}
				typed := documents(t, out)
				if len(typed) != 1 {
					t.Fatalf("kubectl set env printed %d documents:\n%s", len(typed), out)
				}
				got := leaves(typed[0], "")
				for p, want := range leaves(doc, "") {
					if g, ok := got[p]; !ok || g != want {
						t.Errorf("Job %s: kubectl's Job type has %s = %q, want %q", name(doc), p, g, want)
					}
				}
			})
		}
	}
}

// leaves flattens a decoded document into its scalar values by path.
func leaves(v any, at string) map[string]string {
	out := map[string]string{}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			for p, s := range leaves(e, at+"."+k) {
				out[p] = s
			}
		}
	case []any:
		for i, e := range v {
			for p, s := range leaves(e, at+"["+strconv.Itoa(i)+"]") {
				out[p] = s
			}
		}
	default:
		out[at] = fmt.Sprint(v)
	}
	return out
}
