package window

import (
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		days    string
		start   time.Duration
		end     time.Duration
	}{
		{in: "Mon-Fri 22:00-06:00 Europe/Berlin", days: "-MTWTF-", start: 22 * time.Hour, end: 6 * time.Hour},
		{in: "Sat,Sun 00:00-24:00", days: "S-----S", end: 24 * time.Hour},
		{in: "Fri-Mon 01:30:15-02:00 UTC", days: "SM---FS", start: time.Hour + 30*time.Minute + 15*time.Second, end: 2 * time.Hour},
		{in: "* 03:00-04:00 Asia/Kathmandu", days: "SMTWTFS", start: 3 * time.Hour, end: 4 * time.Hour},
		{in: "wednesday 10:00-11:00", days: "---W---", start: 10 * time.Hour, end: 11 * time.Hour},
		{in: "Mon 10:00", err: "want START-END"},
		{in: "Mon-Fri", err: "want DAYS START-END"},
		{in: "Xyz 10:00-11:00", err: `day "Xyz"`},
		{in: "Mon 24:00-01:00", err: "hours go up to 23"},
		{in: "Mon 10:60-11:00", err: "up to 59"},
		{in: "Mon 1:00-2:00", err: "want HH:MM"},
		{in: "Mon 10:00-11:00 Mars/Olympus", err: "IANA name"},
		{in: "Mon 10:00-11:00 Local", err: "IANA name"},
	} {
		w, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %v, want error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		days := ""
		for i, on := range w.Days {
			if on {
				days += string("SMTWTFS"[i])
			} else {
				days += "-"
			}
		}
		if days != tc.days || w.Start != tc.start || w.End != tc.end {
			t.Errorf("Parse(%q) = days %s %s-%s, want %s %s-%s", tc.in, days, w.Start, w.End, tc.days, tc.start, tc.end)
		}
	}
}

func TestParseList(t *testing.T) {
	ws, err := ParseList("# nights\nMon-Fri 22:00-06:00 Europe/Berlin\n\nSat,Sun 00:00-24:00 UTC; Wed 12:00-13:00")
	if err != nil || len(ws) != 3 {
		t.Fatalf("ParseList = %d windows, %v", len(ws), err)
	}
	if _, err := ParseList("Mon 10:00-11:00\nbad\nTue 25:00-26:00"); err == nil ||
		!strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), `"Tue 25:00-26:00"`) {
		t.Errorf("ParseList of bad windows: %v, want both named", err)
	}
}

func TestAt(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	kathmandu := mustZone(t, "Asia/Kathmandu")
	newYork := mustZone(t, "America/New_York")
	at := func(l *time.Location, s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", s, l)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		name    string
		windows []string
		now     time.Time
		open    bool
		until   time.Time // when open
		next    time.Time // when closed
	}{
		{name: "no windows: always open", now: at(time.UTC, "2026-12-01 12:00:00"), open: true},
		{name: "inside a day window", windows: []string{"Tue 10:00-14:00 UTC"},
			now: at(time.UTC, "2026-12-01 12:00:00"), open: true, until: at(time.UTC, "2026-12-01 14:00:00")},
		{name: "start is inside, end is not", windows: []string{"Tue 10:00-14:00 UTC"},
			now: at(time.UTC, "2026-12-01 14:00:00"), next: at(time.UTC, "2026-12-08 10:00:00")},
		{name: "before today's window", windows: []string{"Tue 10:00-14:00 UTC"},
			now: at(time.UTC, "2026-12-01 09:59:59"), next: at(time.UTC, "2026-12-01 10:00:00")},
		{name: "overnight, opened yesterday", windows: []string{"Mon 22:00-06:00 Europe/Berlin"},
			now: at(berlin, "2026-12-01 05:00:00"), open: true, until: at(berlin, "2026-12-01 06:00:00")},
		{name: "overnight, after it closed", windows: []string{"Mon 22:00-06:00 Europe/Berlin"},
			now: at(berlin, "2026-12-01 06:30:00"), next: at(berlin, "2026-12-07 22:00:00")},
		{name: "zone with a 45-minute offset", windows: []string{"Tue 18:00-19:00 Asia/Kathmandu"},
			now: at(time.UTC, "2026-12-01 12:00:00"), next: at(time.UTC, "2026-12-01 12:15:00")},
		{name: "zone's weekday differs from UTC's", windows: []string{"Wed 01:00-02:00 Asia/Kathmandu"},
			now: at(time.UTC, "2026-12-01 19:20:00"), open: true, until: at(kathmandu, "2026-12-02 02:00:00")},
		{name: "several windows: the earliest next", windows: []string{"Fri 10:00-11:00 UTC", "Wed 10:00-11:00 UTC"},
			now: at(time.UTC, "2026-12-01 12:00:00"), next: at(time.UTC, "2026-12-02 10:00:00")},
		{name: "several open: the latest end", windows: []string{"Tue 10:00-13:00 UTC", "Tue 11:00-15:00 UTC"},
			now: at(time.UTC, "2026-12-01 12:00:00"), open: true, until: at(time.UTC, "2026-12-01 15:00:00")},
		{name: "DST spring forward: local hours kept", windows: []string{"Sun 01:00-04:00 America/New_York"},
			now: at(time.UTC, "2026-03-08 07:30:00"), open: true, until: at(newYork, "2026-03-08 04:00:00")},
		{name: "DST: next week's window at the same local hour", windows: []string{"Sat 09:00-10:00 Europe/Berlin"},
			now: at(berlin, "2026-03-28 10:30:00"), next: at(berlin, "2026-04-04 09:00:00")},
		{name: "DST gap: a start that does not exist moves on", windows: []string{"Sun 02:30-04:00 Europe/Berlin"},
			now: at(time.UTC, "2026-03-29 00:00:00"), next: at(time.UTC, "2026-03-29 01:30:00")},
		{name: "every day, whole day", windows: []string{"* 00:00-24:00 UTC"},
			now: at(time.UTC, "2026-12-01 23:59:59"), open: true, until: at(time.UTC, "2026-12-02 00:00:00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws Windows
			for _, s := range tc.windows {
				w, err := Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				ws = append(ws, w)
			}
			st := ws.At(tc.now)
			if st.Open != tc.open {
				t.Fatalf("At(%s) open = %v, want %v (%+v)", tc.now, st.Open, tc.open, st)
			}
			if tc.open && !st.Until.Equal(tc.until) {
				t.Errorf("until %s, want %s", st.Until, tc.until)
			}
			if !tc.open && !st.Next.Equal(tc.next) {
				t.Errorf("next %s, want %s", st.Next.UTC(), tc.next.UTC())
			}
		})
	}
}
