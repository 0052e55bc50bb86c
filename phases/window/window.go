// Package window is the pure arithmetic of maintenance windows: parsing
// "Mon-Fri 22:00-06:00 Europe/Berlin" and finding, for a moment, whether a
// window is open (and until when) or when the next one opens. Times are
// wall-clock times in the window's IANA time zone, so a window keeps its
// local hours across daylight saving changes; the zone database is embedded
// in the binary (time/tzdata), so a node without /usr/share/zoneinfo reads
// the same zones.
package window

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones without the host's zoneinfo
)

// Window is one weekly maintenance window: it opens on each of Days at Start
// (wall clock in Zone) and closes at End; an End not after Start closes on
// the next day (an overnight window).
type Window struct {
	// Days are the weekdays the window opens on.
	Days [7]bool
	// Start and End are offsets from local midnight; End may be 24h.
	Start, End time.Duration
	Zone       *time.Location
	// Text is the window as written.
	Text string
}

// Windows are several windows; the set is open when any of them is.
type Windows []Window

var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Parse reads one window: DAYS START-END ZONE, DAYS a comma-separated list
// of days or day ranges (Mon-Fri, Sat,Sun, Fri-Mon, or * for every day),
// START and END as HH:MM or HH:MM:SS (END may be 24:00), ZONE an IANA name
// (UTC, Europe/Berlin). The zone may be left out for UTC.
func Parse(s string) (Window, error) {
	w := Window{Text: strings.TrimSpace(s)}
	f := strings.Fields(s)
	if len(f) != 2 && len(f) != 3 {
		return w, fmt.Errorf("window %q: want DAYS START-END [ZONE], e.g. \"Mon-Fri 22:00-06:00 Europe/Berlin\"", w.Text)
	}
	if err := parseDays(f[0], &w.Days); err != nil {
		return w, fmt.Errorf("window %q: %w", w.Text, err)
	}
	from, to, ok := strings.Cut(f[1], "-")
	if !ok {
		return w, fmt.Errorf("window %q: times %q: want START-END, e.g. 22:00-06:00", w.Text, f[1])
	}
	var err error
	if w.Start, err = parseClock(from, false); err != nil {
		return w, fmt.Errorf("window %q: start: %w", w.Text, err)
	}
	if w.End, err = parseClock(to, true); err != nil {
		return w, fmt.Errorf("window %q: end: %w", w.Text, err)
	}
	w.Zone = time.UTC
	if len(f) == 3 {
		if w.Zone, err = time.LoadLocation(f[2]); err != nil || f[2] == "Local" || f[2] == "" {
			return w, fmt.Errorf("window %q: time zone %q: want an IANA name such as Europe/Berlin or UTC", w.Text, f[2])
		}
	}
	return w, nil
}

// ParseList reads windows separated by newlines or semicolons; empty
// entries and lines starting with # are left out.
func ParseList(s string) (Windows, error) {
	var ws Windows
	var errs []error
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ';' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w, err := Parse(line)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ws = append(ws, w)
	}
	return ws, errors.Join(errs...)
}

func parseDays(s string, days *[7]bool) error {
	if s == "*" {
		*days = [7]bool{true, true, true, true, true, true, true}
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := day(from)
		if err != nil {
			return err
		}
		b := a
		if isRange {
			if b, err = day(to); err != nil {
				return err
			}
		}
		for d := a; ; d = (d + 1) % 7 {
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return nil
}

func day(s string) (int, error) {
	l := strings.ToLower(s)
	for i, n := range dayNames {
		if l == n || l == strings.ToLower(time.Weekday(i).String()) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("day %q: want Mon, Tue, Wed, Thu, Fri, Sat or Sun", s)
}

// parseClock reads HH:MM or HH:MM:SS; 24:00 only when end is set.
func parseClock(s string, end bool) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 || n < 0 {
			return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS", s)
		}
		v[i] = n
	}
	d := time.Duration(v[0])*time.Hour + time.Duration(v[1])*time.Minute + time.Duration(v[2])*time.Second
	switch {
	case v[1] > 59 || v[2] > 59:
		return 0, fmt.Errorf("time %q: minutes and seconds go up to 59", s)
	case end && d == 24*time.Hour:
		return d, nil
	case v[0] > 23:
		return 0, fmt.Errorf("time %q: hours go up to 23 (24:00 only as an end)", s)
	}
	return d, nil
}

// State is where a moment stands against the windows.
type State struct {
	// Open reports whether a window is open now; Until is then when the
	// latest-closing open window closes.
	Open  bool
	Until time.Time
	// Next is when the next window opens, when none is open; zero when no
	// window ever opens (no days).
	Next time.Time
	// Window is the window that is open, or opens at Next.
	Window string
}

// At returns where now stands against ws. No windows at all means always
// open (Open with a zero Until).
func (ws Windows) At(now time.Time) State {
	if len(ws) == 0 {
		return State{Open: true}
	}
	var st State
	for _, w := range ws {
		// A window opened yesterday may still be open (overnight); one that
		// opens within the coming week is the next.
		for k := -1; k <= 7; k++ {
			start, end, ok := w.occurrence(now, k)
			if !ok {
				continue
			}
			if !now.Before(start) && now.Before(end) {
				if !st.Open || end.After(st.Until) {
					st.Open, st.Until, st.Window = true, end, w.Text
				}
			} else if start.After(now) && (st.Next.IsZero() || start.Before(st.Next)) {
				st.Next = start
				if !st.Open {
					st.Window = w.Text
				}
			}
		}
	}
	if st.Open {
		st.Next = time.Time{}
	}
	return st
}

// occurrence is the window's opening k days from now's local date in its
// zone, when it opens that weekday. Wall-clock hours that do not exist (a
// DST gap) move forward as time.Date normalises them.
func (w Window) occurrence(now time.Time, k int) (time.Time, time.Time, bool) {
	local := now.In(w.Zone)
	y, m, d := local.Date()
	day := time.Date(y, m, d+k, 0, 0, 0, 0, w.Zone)
	if !w.Days[day.Weekday()] {
		return time.Time{}, time.Time{}, false
	}
	start := wall(day, w.Start)
	endDay := day
	if w.End <= w.Start {
		endDay = time.Date(y, m, d+k+1, 0, 0, 0, 0, w.Zone)
	}
	return start, wall(endDay, w.End), true
}

// wall is the wall-clock time off after the local midnight of day.
func wall(day time.Time, off time.Duration) time.Time {
	y, m, d := day.Date()
	h, rest := off/time.Hour, off%time.Hour
	return time.Date(y, m, d, int(h), int(rest/time.Minute), int(rest%time.Minute/time.Second), 0, day.Location())
}
