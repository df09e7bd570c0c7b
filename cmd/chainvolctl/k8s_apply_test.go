package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

var testImport = importOptions{target: "s3", driver: defaultDriverName, policy: "Retain"}

// testPair is the pair of backup chain@id.
func testPair(t *testing.T, chain, id string) snapshotPair {
	t.Helper()
	p, err := pairFor(&s3chain.Manifest{Chain: chain, ID: id, CreatedAt: time.Unix(1e9, 0)}, testImport)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// restores returns the snapshotHandle the VolumeSnapshot ns/name restores
// through its content.
func restores(t *testing.T, cs *fake.Clientset, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	s, err := cs.SnapshotV1().VolumeSnapshots(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cs.SnapshotV1().VolumeSnapshotContents().Get(ctx, *s.Spec.Source.VolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Spec.VolumeSnapshotRef; r.Namespace != ns || r.Name != name {
		t.Errorf("content %s is bound to %s/%s, not %s/%s", c.Name, r.Namespace, r.Name, ns, name)
	}
	return *c.Spec.Source.SnapshotHandle
}

// TestApplyReviewPairs: applying both backups of each of the review's
// pairs makes two VolumeSnapshots, each restoring (through its content's
// snapshotHandle) its own backup; applying again changes nothing.
func TestApplyReviewPairs(t *testing.T) {
	cs := fake.NewSimpleClientset()
	var pairs []snapshotPair
	for _, p := range reviewPairs {
		pairs = append(pairs, testPair(t, p[0][0], p[0][1]), testPair(t, p[1][0], p[1][1]))
	}
	if err := distinctSnapshots(pairs); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := applyWith(context.Background(), &log, cs.SnapshotV1(), pairs); err != nil {
		t.Fatalf("apply: %v\n%s", err, &log)
	}
	list, _ := cs.SnapshotV1().VolumeSnapshots("shop").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 6 {
		t.Fatalf("%d volumesnapshots, want 6:\n%s", len(list.Items), &log)
	}
	for _, p := range reviewPairs {
		for _, b := range p {
			want := backupid.Format(target.Ref{Target: "s3", Chain: b[0], Backup: b[1]})
			if got := restores(t, cs, "shop", snapshotName(b[0], b[1])); got != want {
				t.Errorf("volumesnapshot of %v restores %s, want %s", b, got, want)
			}
		}
	}
	log.Reset()
	if err := applyWith(context.Background(), &log, cs.SnapshotV1(), pairs); err != nil || strings.Contains(log.String(), "created") {
		t.Errorf("second apply: %v\n%s", err, &log)
	}
}

// TestApplyNameTaken: a VolumeSnapshot of the pair's name that another
// backup's content backs is kept, the pair's content is not made, the
// other pairs are still applied, and the command fails naming both.
func TestApplyNameTaken(t *testing.T) {
	p, other := testPair(t, "shop/db", "20261129T101500Z"), testPair(t, "shop/web", "20261129T101500Z")
	squatter := p.Snapshot.DeepCopy()
	elsewhere := "chainvol-elsewhere"
	squatter.Spec.Source.VolumeSnapshotContentName = &elsewhere
	squatter.Annotations[backupAnnotation] = "offsite:shop/db@20261129T101500Z"
	cs := fake.NewSimpleClientset(squatter)
	var log bytes.Buffer
	err := applyWith(context.Background(), &log, cs.SnapshotV1(), []snapshotPair{p, other})
	if !errors.Is(err, errNameTaken) || !strings.Contains(err.Error(), "offsite:shop/db@20261129T101500Z") || !strings.Contains(err.Error(), "s3:shop/db@20261129T101500Z") {
		t.Fatalf("apply over a taken name: %v", err)
	}
	ctx := context.Background()
	if s, _ := cs.SnapshotV1().VolumeSnapshots("shop").Get(ctx, p.Snapshot.Name, metav1.GetOptions{}); *s.Spec.Source.VolumeSnapshotContentName != "chainvol-elsewhere" {
		t.Errorf("the other backup's snapshot was replaced: %+v", s.Spec.Source)
	}
	if _, err := cs.SnapshotV1().VolumeSnapshotContents().Get(ctx, p.Content.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("a content was made for a snapshot name that is taken")
	}
	if got := restores(t, cs, "shop", other.Snapshot.Name); got != *other.Content.Spec.Source.SnapshotHandle {
		t.Errorf("the other pair restores %s", got)
	}
}

// TestApplyContentTaken: a content of the pair's name holding another
// handle is kept and reported, and no snapshot is made for it.
func TestApplyContentTaken(t *testing.T) {
	p := testPair(t, "shop/db", "20261129T101500Z")
	c := p.Content.DeepCopy()
	h := "backup:s3:shop/other@x"
	c.Spec.Source.SnapshotHandle = &h
	cs := fake.NewSimpleClientset(c)
	var log bytes.Buffer
	if err := applyWith(context.Background(), &log, cs.SnapshotV1(), []snapshotPair{p}); !errors.Is(err, errNameTaken) || !strings.Contains(err.Error(), h) {
		t.Fatalf("apply over a taken content: %v", err)
	}
	if _, err := cs.SnapshotV1().VolumeSnapshots("shop").Get(context.Background(), p.Snapshot.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("a snapshot was bound to another backup's content")
	}
}

// TestApplyImportedEarlier: a backup an older version imported under
// another snapshot name (its content, named from the handle, bound to
// that name) is left as it is: no second snapshot competes for the content.
func TestApplyImportedEarlier(t *testing.T) {
	p := testPair(t, "shop/db", "Nightly")
	c := p.Content.DeepCopy()
	c.Spec.VolumeSnapshotRef.Name = "db-nightly"
	old := p.Snapshot.DeepCopy()
	old.Name = "db-nightly"
	cs := fake.NewSimpleClientset(c, old)
	var log bytes.Buffer
	if err := applyWith(context.Background(), &log, cs.SnapshotV1(), []snapshotPair{p}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "imported as volumesnapshot shop/db-nightly") {
		t.Errorf("log does not say where the backup is: %s", &log)
	}
	list, _ := cs.SnapshotV1().VolumeSnapshots("shop").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 1 {
		t.Errorf("%d snapshots, want only the earlier one", len(list.Items))
	}
}

// TestDistinctSnapshots: --namespace-map merging two namespaces whose
// chains share a name and a default id is a usage error naming both.
func TestDistinctSnapshots(t *testing.T) {
	o := testImport
	o.nsMap = map[string]string{"a": "dr", "b": "dr"}
	var pairs []snapshotPair
	for _, c := range []string{"a/db", "b/db"} {
		p, err := pairFor(&s3chain.Manifest{Chain: c, ID: "20261129T101500Z"}, o)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	var u usageError
	if err := distinctSnapshots(pairs); !errors.As(err, &u) || !strings.Contains(err.Error(), "s3:a/db@") || !strings.Contains(err.Error(), "s3:b/db@") {
		t.Errorf("merged namespaces: %v", err)
	}
	if err := distinctSnapshots(pairs[:1]); err != nil {
		t.Error(err)
	}
}
