package textfmt

import (
	"io"
	"strings"
	"testing"
)

func TestWritersUnknownFormat(t *testing.T) {
	called := ""
	ws := Writers{
		{"text", func(io.Writer) error { called = "text"; return nil }},
		{"json", func(io.Writer) error { called = "json"; return nil }},
	}
	if err := ws.Write(io.Discard, "x.Report", "json"); err != nil || called != "json" {
		t.Fatalf("json: err %v, called %q", err, called)
	}
	err := ws.Write(io.Discard, "x.Report", "html")
	if err == nil || !strings.Contains(err.Error(), `x.Report writes no format "html"; its formats are "text", "json"`) {
		t.Fatalf("html: %v", err)
	}
}
