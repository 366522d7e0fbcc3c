package meta_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
)

// The facts kept beside the record survive a round trip through a pprof
// file and are read back as they were written, among comments of others.
func TestCommentsRoundTrip(t *testing.T) {
	c := []string{"kept by the user"}
	c = meta.MarkExact(c)
	c = meta.MarkExact(c) // once
	c = meta.AppendFormat(c, "speedscope")
	c = meta.AppendWarning(c, "first")
	c = meta.AppendWarning(c, "second: with a colon")
	c = meta.WithAllocProfile(c, []byte("old"))
	c = meta.WithAllocProfile(c, []byte{0, 1, 0xff, 'x'}) // replaces
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, Comments: c}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Comments) != 6 || q.Comments[0] != "kept by the user" {
		t.Errorf("comments %q, want the user's and 5 of hotbudget's", q.Comments)
	}
	if !meta.IsExact(q.Comments) || meta.IsExact([]string{"kept by the user"}) {
		t.Error("IsExact")
	}
	if f := meta.Format(q.Comments); f != "speedscope" {
		t.Errorf("Format %q", f)
	}
	if f := meta.Format(nil); f != "" {
		t.Errorf("Format of no comments %q", f)
	}
	if w := meta.Warnings(q.Comments); !slices.Equal(w, []string{"first", "second: with a colon"}) {
		t.Errorf("Warnings %q", w)
	}
	// Read reads them all at once, as the readers one by one do.
	f := meta.Read(q.Comments)
	if !f.Exact || !slices.Equal(f.Warnings, meta.Warnings(q.Comments)) || f.HasRecord || f.RecordErr != nil {
		t.Errorf("Read %+v", f)
	}
	a, ok, err := meta.AllocProfile(q.Comments)
	if err != nil || !ok || !bytes.Equal(a, []byte{0, 1, 0xff, 'x'}) {
		t.Errorf("AllocProfile %q %v %v", a, ok, err)
	}
	if _, ok, err := meta.AllocProfile(c[:1]); ok || err != nil {
		t.Errorf("no allocation profile: ok %v err %v", ok, err)
	}
	bad := meta.WithAllocProfile(nil, nil)
	bad[0] += "%%%"
	if _, ok, err := meta.AllocProfile(bad); ok || err == nil {
		t.Errorf("an allocation record that is not base64: ok %v err %v", ok, err)
	}
	// Set keeps the other facts.
	meta.Set(q, meta.Record{Name: "x"})
	if !meta.IsExact(q.Comments) || meta.Format(q.Comments) != "speedscope" || len(meta.Warnings(q.Comments)) != 2 {
		t.Errorf("Set dropped facts: %q", q.Comments)
	}
}
