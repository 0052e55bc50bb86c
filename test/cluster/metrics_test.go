package cluster

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/kubenode"
)

// scrapedByPrometheus runs a real Prometheus in the network of node promNode
// (as one on the cluster's network) with the shipped scrape jobs
// (manifests/prometheus/scrape-config.yaml: the Services of
// 08-metrics.yaml, found through the API server) and the shipped alert
// rules, and its own ServiceAccount bound to the shipped ClusterRole
// nodeconfd-metrics-reader: every daemon and both controller replicas are
// up; the same jobs without a token are refused (401); a token of another
// account is forbidden (403); the alert rules evaluate on the scraped
// series, each node's named.
func scrapedByPrometheus(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, promNode string) {
	t.Helper()
	begin := time.Now()
	dir := t.TempDir()
	promToken, strangerToken := monitoringAccounts(ctx, t)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(promToken), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "sd.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(sdKubeconfig(tokenFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(filepath.Join(repoRoot, "manifests/prometheus/alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prom, err := bed.StartPrometheusOn(ctx, nodes[promNode], dir, promConfig(t, kubeconfig, tokenFile),
		map[string]string{"alerts.yaml": string(rules)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prom.Stop)
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	p := promv1.NewAPI(client)
	waitTargets(ctx, t, p, len(nodes))
	checkSeries(ctx, t, p, nodes)
	checkRules(ctx, t, p, string(rules), len(nodes))
	for name, n := range nodes {
		checkDirectScrape(ctx, t, name, n, promToken, strangerToken)
	}
	t.Logf("Prometheus scraped %d daemons and 2 controller replicas through the shipped objects; checked in %s",
		len(nodes), time.Since(begin).Round(100*time.Millisecond))
}

// repoRoot is the repository, from this package.
const repoRoot = "../.."

// monitoringAccounts creates Prometheus' ServiceAccount, bound to the
// shipped nodeconfd-metrics-reader and allowed its discovery in the
// nodeconfd namespace, and a stranger bound to nothing; it returns a token
// of each.
func monitoringAccounts(ctx context.Context, t *testing.T) (prom, stranger string) {
	t.Helper()
	k := bed.Kube
	const ns = "monitoring"
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	for _, sa := range []string{"prometheus", "stranger"} {
		must(k.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}},
			metav1.CreateOptions{}))
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}}
	must(k.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-nodeconfd"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodeconfd-metrics-reader"},
		Subjects: subject}, metav1.CreateOptions{}))
	must(k.RbacV1().Roles(testbed.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-discovery"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		}}, metav1.CreateOptions{}))
	must(k.RbacV1().RoleBindings(testbed.Namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-discovery"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "prometheus-discovery"},
		Subjects: subject}, metav1.CreateOptions{}))
	token := func(sa string) string {
		t.Helper()
		hour := int64(3600)
		tr, err := k.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	return token("prometheus"), token("stranger")
}

// sdKubeconfig is the discovery's kubeconfig: the API server at the
// kubernetes Service's address, as from a pod, with Prometheus' token.
func sdKubeconfig(tokenFile string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bed
  cluster:
    server: https://%s:443
    certificate-authority-data: %s
users:
- name: prometheus
  user:
    tokenFile: %s
contexts:
- name: bed
  context: {cluster: bed, user: prometheus}
current-context: bed
`, kubenode.ServiceIP, base64.StdEncoding.EncodeToString(bed.CP.CACert()), tokenFile)
}

// promConfig is the shipped scrape jobs, their discovery given the bed's
// kubeconfig and their token Prometheus' (in a pod: its own), each also
// as a job without a token; scrapes and rules every 2 s.
func promConfig(t *testing.T, kubeconfig, tokenFile string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "manifests/prometheus/scrape-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped struct {
		ScrapeConfigs []map[string]any `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &shipped); err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]any
	for _, job := range shipped.ScrapeConfigs {
		for _, sd := range job["kubernetes_sd_configs"].([]any) {
			sd.(map[string]any)["kubeconfig_file"] = kubeconfig
		}
		job["authorization"] = map[string]any{"credentials_file": tokenFile}
		anon := map[string]any{}
		for k, v := range job {
			anon[k] = v
		}
		delete(anon, "authorization")
		anon["job_name"] = job["job_name"].(string) + "-no-token"
		jobs = append(jobs, job, anon)
	}
	out, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "2s", "evaluation_interval": "2s"},
		"rule_files":     []string{"alerts.yaml"},
		"scrape_configs": jobs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// waitTargets waits until each shipped job has its targets up (a daemon
// per node, two controller replicas) and each job without a token has
// them down, refused with 401.
func waitTargets(ctx context.Context, t *testing.T, p promv1.API, nodes int) {
	t.Helper()
	want := map[string]int{"nodeconfd": nodes, "nodeconfd-controller": 2}
	var last string
	for {
		res, err := p.Targets(ctx)
		if err == nil {
			up, refused := map[string]int{}, map[string]int{}
			var b strings.Builder
			for _, tg := range res.Active {
				job := string(tg.Labels["job"])
				fmt.Fprintf(&b, "%s %s %s %q\n", job, tg.ScrapeURL, tg.Health, tg.LastError)
				base, anon := strings.CutSuffix(job, "-no-token")
				switch {
				case anon && tg.Health == promv1.HealthBad && strings.Contains(tg.LastError, "401"):
					refused[base]++
				case !anon && tg.Health == promv1.HealthGood:
					up[base]++
				}
			}
			last = b.String()
			if maps(up, want) && maps(refused, want) {
				t.Logf("Prometheus' targets:\n%s", last)
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the targets to be up, and refused without a token: %v; targets:\n%s", ctx.Err(), last)
		case <-time.After(time.Second):
		}
	}
}

func maps(got, want map[string]int) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// checkSeries queries what the scrapes brought: up, the build of every
// process, each node's reboot-required gauge, and the leader's pools.
func checkSeries(ctx context.Context, t *testing.T, p promv1.API, nodes map[string]*testbed.KubeNode) {
	t.Helper()
	release := bed.Images().DaemonRef[strings.LastIndex(bed.Images().DaemonRef, ":")+1:]
	for _, c := range []struct {
		query string
		want  int // series
		check func(model.Sample) error
	}{
		{`up{job="nodeconfd"} == 1`, len(nodes), hasNode(nodes)},
		{`up{job="nodeconfd-controller"} == 1`, 2, nil},
		{`nodeconfd_build_info{version="` + release + `"}`, len(nodes) + 2, nil},
		{`nodeconfd_reboot_required{job="nodeconfd"} == 0`, len(nodes), hasNode(nodes)},
		{`nodeconfd_controller_leader == 1`, 1, nil},
		// The bed may hold an earlier test's node for a moment: at least these.
		{`nodeconfd_pool_machines{pool="worker",state="total"} >= ` + fmt.Sprint(len(nodes)), 1, nil},
		{`nodeconfd_pool_handoffs_total{pool="worker"}`, 1, nil},
	} {
		if err := waitQuery(ctx, p, c.query, c.want, c.check); err != nil {
			t.Error(err)
		}
	}
}

// hasNode checks that a daemon's series carries its node's name, which the
// alerts give.
func hasNode(nodes map[string]*testbed.KubeNode) func(model.Sample) error {
	return func(s model.Sample) error {
		if _, ok := nodes[string(s.Metric["node"])]; !ok {
			return fmt.Errorf("series %s has no node label of the bed's nodes", s.Metric)
		}
		return nil
	}
}

// waitQuery waits until query returns want series (the leader's pool
// series come with its first reconcile), each passing check.
func waitQuery(ctx context.Context, p promv1.API, query string, want int, check func(model.Sample) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last string
	for {
		v, _, _, err := p.Query(ctx, query, time.Now())
		if vec, ok := v.(model.Vector); err == nil && ok {
			last = vec.String()
			bad := error(nil)
			for _, s := range vec {
				if check != nil && bad == nil {
					bad = check(*s)
				}
			}
			if len(vec) == want && bad == nil {
				return nil
			}
			if bad != nil {
				last += " (" + bad.Error() + ")"
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("query %s: want %d series, got %s (%v)", query, want, last, err)
		case <-time.After(time.Second):
		}
	}
}

// checkRules checks the shipped alert rules as Prometheus evaluates them
// on the scraped series: each evaluated without error, and each metric an
// alert reads present for every node (but the start of a phase, which has
// a series only while a phase runs), so that an alert can fire and name
// the node.
func checkRules(ctx context.Context, t *testing.T, p promv1.API, rules string, nodes int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := p.Rules(ctx, nil)
		var pending []string
		for _, g := range res.Groups {
			for _, r := range g.Rules {
				a, ok := r.(promv1.AlertingRule)
				if !ok {
					continue
				}
				if a.Health != promv1.RuleHealthGood || a.LastError != "" {
					pending = append(pending, fmt.Sprintf("%s: health %s, error %q", a.Name, a.Health, a.LastError))
				}
			}
		}
		if err == nil && len(res.Groups) > 0 && len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the alert rules did not all evaluate well: %v %v", err, pending)
		}
		time.Sleep(time.Second)
	}
	var metrics []string
	for _, m := range regexp.MustCompile(`nodeconfd_[a-z_]+`).FindAllString(rules, -1) {
		if !slices.Contains(metrics, m) && m != "nodeconfd_phase_start_time_seconds" {
			metrics = append(metrics, m)
		}
	}
	for _, m := range metrics {
		if err := waitQuery(ctx, p, `count by (node) (`+m+`)`, nodes, nil); err != nil {
			t.Errorf("a metric the alerts read: %v", err)
		}
	}
}

// checkDirectScrape reads the daemon of node n at its address as the
// Service names it: no token 401, a stranger's 403, Prometheus' the page;
// the probes' paths need no token.
func checkDirectScrape(ctx context.Context, t *testing.T, name string, n *testbed.KubeNode, promToken, strangerToken string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the daemon's self-signed certificate
	base := "https://" + net.JoinHostPort(n.IP.String(), "8798")
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "not-a-token", http.StatusUnauthorized},
		{"/metrics", strangerToken, http.StatusForbidden},
		{"/metrics", promToken, http.StatusOK},
		{"/healthz", "", http.StatusOK},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("node %s: GET %s: %v", name, c.path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("node %s: GET %s with token %v: %d %q, want %d", name, c.path, c.token != "", resp.StatusCode, body, c.want)
		}
		if c.want == http.StatusOK && c.path == "/metrics" && !strings.Contains(string(body), "nodeconfd_build_info{") {
			t.Errorf("node %s: the page has no nodeconfd_build_info", name)
		}
	}
}
