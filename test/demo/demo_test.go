package main

import "testing"

func TestWithoutAge(t *testing.T) {
	cases := []struct{ in, want string }{
		{"NAME       UPDATED   AGE   POOL\nworker-0   True      4s    worker\n", "NAME       UPDATED   POOL\nworker-0   True      worker\n"},
		{"NAME       UPDATED   AGE   POOL\nworker-0   True      105s  worker\n", "NAME       UPDATED   POOL\nworker-0   True      worker\n"},
		{"NAME       UPDATED\nworker-0   True\n", "NAME       UPDATED\nworker-0   True\n"},
		{"", ""},
		{"NAME     CONFIG   UPDATED   AGE\nworker   r-1      True      12s\n", "NAME     CONFIG   UPDATED\nworker   r-1      True\n"},
		{"NAME     UPDATED   AGE\nworker   True      4m12s\n", "NAME     UPDATED\nworker   True\n"},
	}
	for _, c := range cases {
		if got := string(withoutAge([]byte(c.in))); got != c.want {
			t.Errorf("withoutAge(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
