package deploy

import (
	"path"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// credentialKeys are the keys of an S3 credentials Secret or file; the
// first two are required.
var credentialKeys = []string{"accessKeyID", "secretAccessKey", "sessionToken", "encryptionKey"}

// secretData returns a Secret's keys and values, Data and StringData merged.
func secretData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}

// findSecret returns the Secret namespace/name under deploy/, or nil.
func findSecret(t *testing.T, namespace, name string) *corev1.Secret {
	t.Helper()
	secrets, _ := objectsOf[corev1.Secret](t, false)
	for _, s := range secrets {
		if s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}

// checkCredentials requires accessKeyID and secretAccessKey and rejects
// any key chainvol does not read (a typo would surface as an S3 403).
func checkCredentials(t *testing.T, where string, kv map[string]string) {
	t.Helper()
	known := set(credentialKeys...)
	for k := range kv {
		if !known[k] {
			t.Errorf("%s: unknown credentials key %q (known: %v)", where, k, credentialKeys)
		}
	}
	for _, k := range credentialKeys[:2] {
		if kv[k] == "" {
			t.Errorf("%s: credentials lack %s", where, k)
		}
	}
}

// checkSecretRef checks a class's <prefix>-name / <prefix>-namespace pair:
// both or neither, and a literal reference names a Secret under deploy/
// holding S3 credentials. Templated names (${pvc.name}) are left alone.
func checkSecretRef(t *testing.T, m manifest, params map[string]string, prefix string) {
	t.Helper()
	name, hasName := params[prefix+"-name"]
	ns, hasNS := params[prefix+"-namespace"]
	if hasName != hasNS {
		t.Errorf("%s: %s-name and %s-namespace must be set together", m, prefix, prefix)
		return
	}
	if !hasName {
		return
	}
	// The sidecars read Secrets only in the plugin's namespace (a Role,
	// not a ClusterRole; issue 17).
	if ds, _ := nodeDaemonSet(t); ns != ds.Namespace {
		t.Errorf("%s: %s-namespace %q; the sidecars may read Secrets only in %s", m, prefix, ns, ds.Namespace)
	}
	if strings.Contains(name+ns, "${") {
		return
	}
	s := findSecret(t, ns, name)
	if s == nil {
		t.Errorf("%s: %s refers to Secret %s/%s, which is not under deploy/", m, prefix, ns, name)
		return
	}
	checkCredentials(t, m.String()+" → Secret "+ns+"/"+name, secretData(s))
}

// TestCredentialsFile checks each -backup-credentials-file is a key of a
// Secret volume mounted into that container, and that the Secret exists
// and holds key=value lines with the credential keys.
func TestCredentialsFile(t *testing.T) {
	base, _ := nodeDaemonSet(t)
	dss, from := objectsOf[appsv1.DaemonSet](t, true)
	checked := 0
	for i, ds := range dss {
		spec := &ds.Spec.Template.Spec
		c := container(spec, driverContainer)
		if c == nil {
			continue
		}
		for _, file := range argValues(c.Args, "backup-credentials-file") {
			checked++
			vm, rel, ok := mountFor(c, file)
			v := volume(spec, vm.Name)
			if v == nil { // an overlay may mount a volume the base defines
				v = volume(&base.Spec.Template.Spec, vm.Name)
			}
			if !ok || v == nil || v.Secret == nil || len(v.Secret.Items) != 0 || strings.Contains(rel, "/") {
				t.Errorf("%s: -backup-credentials-file=%s is not a key of a mounted Secret volume", from[i], file)
				continue
			}
			s := findSecret(t, ds.Namespace, v.Secret.SecretName)
			if s == nil {
				t.Errorf("%s: Secret %s/%s is not under deploy/", from[i], ds.Namespace, v.Secret.SecretName)
				continue
			}
			content, ok := secretData(s)[path.Base(file)]
			if !ok {
				t.Errorf("%s: Secret %s has no key %q", from[i], s.Name, path.Base(file))
				continue
			}
			checkCredentials(t, "Secret "+s.Name+" key "+path.Base(file), parseKeyValues(t, content))
		}
	}
	if checked == 0 {
		t.Error("no example passes -backup-credentials-file; the S3 overlay should")
	}
}

// parseKeyValues reads the credentials file format: key=value per line,
// blank lines ignored.
func parseKeyValues(t *testing.T, content string) map[string]string {
	t.Helper()
	kv := map[string]string{}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("credentials line %q is not key=value", line)
			continue
		}
		kv[k] = v
	}
	return kv
}
