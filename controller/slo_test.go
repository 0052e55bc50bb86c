package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The SLO queries' answers are read through Prometheus' client library,
// and one too large is refused, naming why: over maxSLOBody bytes, or
// more than maxSLOSeries samples.
func TestPrometheusValuesCapped(t *testing.T) {
	var series, padding int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		for i := range series {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"metric":{"i":"%d","pad":"%s"},"value":[1767225600,"0.5"]}`, i, strings.Repeat("p", padding))
		}
		fmt.Fprint(w, `]}}`)
	}))
	defer srv.Close()
	p, err := NewPrometheus(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name            string
		series, padding int
		wantN           int
		wantErr         string
	}{
		{"small", 3, 0, 3, ""},
		{"too many series", maxSLOSeries + 1, 0, 0, "series"},
		{"too many bytes", 100, maxSLOBody / 50, 0, fmt.Sprintf("over %d bytes", maxSLOBody)},
	} {
		t.Run(c.name, func(t *testing.T) {
			series, padding = c.series, c.padding
			got, err := p.Values(context.Background(), "up")
			switch {
			case c.wantErr == "" && (err != nil || len(got) != c.wantN):
				t.Errorf("%d values, %v; want %d", len(got), err, c.wantN)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("%d values, %v; want an error with %q", len(got), err, c.wantErr)
			}
		})
	}
}
