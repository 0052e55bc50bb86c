package faultpoint

import "testing"

func TestParse(t *testing.T) {
	cases := []struct {
		spec  string
		point string
		n     int
		bad   bool
	}{
		{spec: "done:write", point: "done:write", n: 1},
		{spec: "file-written:200", point: "file-written", n: 200},
		{spec: "ran:reboot:2", point: "ran:reboot", n: 2},
		{spec: "journal-append", point: "journal-append", n: 1},
		{spec: ":3", bad: true},
		{spec: "x:0", bad: true},
	}
	for _, c := range cases {
		point, n, err := Parse(c.spec)
		if c.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %q, %d; want an error", c.spec, point, n)
			}
			continue
		}
		if err != nil || point != c.point || n != c.n {
			t.Errorf("Parse(%q) = %q, %d, %v; want %q, %d", c.spec, point, n, err, c.point, c.n)
		}
	}
}

func TestUnset(t *testing.T) {
	t.Setenv(EnvVar, "")
	if f, err := FromEnv(); f != nil || err != nil {
		t.Errorf("FromEnv() with the variable unset = %v, %v; want nil, nil", f != nil, err)
	}
}

func TestCountsHits(t *testing.T) {
	t.Setenv(EnvVar, "file-written:1000")
	f, err := FromEnv()
	if err != nil || f == nil {
		t.Fatalf("FromEnv() = %v, %v", f != nil, err)
	}
	for range 999 {
		f("file-written") // below the count: goes on
	}
	f("done:write") // another point: goes on
}
