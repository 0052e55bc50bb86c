package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ErrNoSeries is a metric with no series: a counter vector before its first
// count, or a name the process does not have.
var ErrNoSeries = errors.New("no series")

// scrape sums the samples of one metric in a Prometheus text page.
func scrape(url, name string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("metric %s at %s: %w", name, url, ErrNoSeries)
	}
	return sum, sc.Err()
}
