package deploy

import (
	"context"
	"os"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestBackupSourceCRD: the CRD passes the apiserver's own validation of
// CustomResourceDefinitions (structural schema, printer columns, status
// subresource), so that applying deploy/base never fails on it.
func TestBackupSourceCRD(t *testing.T) {
	data, err := os.ReadFile("base/crd-backupsource.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v1 apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1); err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := apiextv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apiextensions.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var crd apiextensions.CustomResourceDefinition
	if err := s.Convert(&v1, &crd, nil); err != nil {
		t.Fatal(err)
	}
	crd.Status.StoredVersions = []string{"v1alpha1"} // as the apiserver's create strategy sets it
	if errs := validation.ValidateCustomResourceDefinition(context.Background(), &crd); len(errs) > 0 {
		t.Fatalf("BackupSource CRD: %v", errs.ToAggregate())
	}
	if crd.Spec.Names.Kind != "BackupSource" || crd.Spec.Group != "chainvol.csi.io" || crd.Spec.Versions[0].Name != "v1alpha1" {
		t.Fatalf("names %+v", crd.Spec.Names)
	}
}
