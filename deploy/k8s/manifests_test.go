// Package k8s holds the Kubernetes manifests of schedrl's deployment; its test applies them
// to a real API server with a server-side dry run, so they are known to be valid.
package k8s

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/schedrl/schedrl/internal/testcert"
	"github.com/schedrl/schedrl/internal/testserver"
)

// kustomization is kubectl's (`kubectl apply -k`): it lists the manifests and sets the image tag.
const kustomization = "kustomization.yaml"

// manifests are the files of this folder holding Kubernetes objects.
func manifests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return f == kustomization })
}

// objects decodes every document of the manifests in this folder.
func objects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range manifests(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m != nil {
				out = append(out, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return out
}

// TestManifestsApplyWithServerSideDryRun: every object of deploy/k8s passes the API server's
// validation (strict: unknown fields are errors) in a server-side apply with dry run, and the
// scheduler configuration loads in kube-scheduler itself.
func TestManifestsApplyWithServerSideDryRun(t *testing.T) {
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	// A dry run creates nothing, so namespaced objects need their namespace for real.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "schedrl"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.Config())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(k.Config())
	if err != nil {
		t.Fatal(err)
	}
	var schedulerConfig string
	objs := objects(t)
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := o.GetNamespace(); ns != "" {
			r = dyn.Resource(m.Resource).Namespace(ns)
		} else if m.Scope.Name() == "namespace" {
			r = dyn.Resource(m.Resource).Namespace("default")
		}
		force := true
		_, err = r.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			DryRun: []string{metav1.DryRunAll}, FieldManager: "schedrl-manifest-test", Force: &force, FieldValidation: "Strict"})
		if err != nil {
			t.Errorf("%s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
		if gvk.Kind == "ConfigMap" && o.GetName() == "schedrl-scheduler" {
			schedulerConfig, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
	}
	if schedulerConfig == "" {
		t.Fatal("no schedrl-scheduler ConfigMap with config.yaml")
	}
	deps, err := testserver.DepsDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, out := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "effective.yaml")
	kubeconfig, err := k.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	// In the cluster the client is the pod's service account; here, the test API server. The
	// extender's tlsConfig files (a mounted Secret there) are certificates made here, so the
	// scheduler builds its TLS client from them.
	ca := testcert.NewCA(t, "schedrl")
	cert, key := ca.Client(t, "schedrl-scheduler")
	tlsDir := t.TempDir()
	for name, from := range map[string]string{"ca.crt": ca.File, "tls.crt": cert, "tls.key": key} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tlsDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	local := strings.ReplaceAll(schedulerConfig, "/etc/schedrl-tls/", tlsDir+"/") + "clientConnection:\n  kubeconfig: " + kubeconfig + "\n"
	if err := os.WriteFile(cfg, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(deps, "bin", "kube-scheduler"), "--config", cfg, "--write-config-to", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kube-scheduler rejects the configuration: %v\n%s", err, msg)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("kube-scheduler wrote no effective configuration: %v", err)
	}
	t.Logf("%d objects valid", len(objs))
}

// TestKustomizationCoversEveryManifestAndImage: `kubectl apply -k deploy/k8s/` installs every
// manifest, and every schedrl container names the image the kustomization retags, pulled only
// when absent (the image is imported on nodes that reach no registry), in a pod without
// Service environment variables.
func TestKustomizationCoversEveryManifestAndImage(t *testing.T) {
	data, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
		Images    []struct {
			Name, NewName, NewTag string
		} `json:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("%s: %v", kustomization, err)
	}
	if got, want := slices.Sorted(slices.Values(k.Resources)), manifests(t); !slices.Equal(got, want) {
		t.Errorf("%s resources %v, want every manifest %v", kustomization, got, want)
	}
	if len(k.Images) != 1 || k.Images[0].NewTag == "" {
		t.Fatalf("%s: want one image entry with newTag, got %+v", kustomization, k.Images)
	}
	image := k.Images[0].Name
	users := 0
	for _, o := range objects(t) {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		links, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "template", "spec", "enableServiceLinks")
		jobContainers, _, _ := unstructured.NestedSlice(o.Object, "spec", "jobTemplate", "spec", "template", "spec", "containers")
		if len(jobContainers) > 0 {
			links, _, _ = unstructured.NestedFieldNoCopy(o.Object, "spec", "jobTemplate", "spec", "template", "spec", "enableServiceLinks")
		}
		for _, c := range append(containers, jobContainers...) {
			c := c.(map[string]any)
			ref, _ := c["image"].(string)
			if !strings.HasPrefix(ref, "schedrl/") {
				continue
			}
			users++
			// Service links would add SCHEDRL_EXTENDER_SERVICE_HOST and the like, which schedrl's
			// configuration refuses (the extender crash-looped on the test node with them).
			if links != false {
				t.Errorf("%s %s: enableServiceLinks %v, want false", o.GetKind(), o.GetName(), links)
			}
			if name, _, _ := strings.Cut(ref, ":"); name != image {
				t.Errorf("%s %s: image %s, not the kustomization's %s", o.GetKind(), o.GetName(), ref, image)
			}
			if c["imagePullPolicy"] != "IfNotPresent" {
				t.Errorf("%s %s: imagePullPolicy %v, want IfNotPresent", o.GetKind(), o.GetName(), c["imagePullPolicy"])
			}
		}
	}
	if users != 3 {
		t.Errorf("%d containers run schedrl's image, want 3 (extender, defrag, retrain)", users)
	}
}
