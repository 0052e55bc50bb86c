package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/template"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/metrics"
	"github.com/nodeconfd/nodeconfd/daemon/notify"
	"github.com/nodeconfd/nodeconfd/names"
)

// notifyOptions are the flags of the notifications (package notify).
type notifyOptions struct {
	url, urlFile, text string
	template           *template.Template
}

func addNotifyFlags(fs *flag.FlagSet) *notifyOptions {
	n := &notifyOptions{}
	fs.StringVar(&n.url, "notify-url", "", "a webhook to POST a JSON notification to (its \"text\" as Slack's, "+
		"Mattermost's and Rocket.Chat's incoming webhooks take it) at the cordon, the reboot, the uncordon, a "+
		"rollback and a failed update (none: no notifications); it is never logged")
	fs.StringVar(&n.urlFile, "notify-url-file", "", "a file holding --notify-url (a mounted Secret: a webhook URL "+
		"often holds a token, which a flag shows in the pod's spec)")
	fs.StringVar(&n.text, "notify-template", notify.DefaultTemplate, "the notification's text, a Go template of "+
		".Node, .Event (cordoned, rebooting, uncordoned, rolled-back, failed), .Config, .Text and .Time")
	return n
}

// check validates the flags, naming the flag at fault; the URL file is
// read here, at start.
func (n *notifyOptions) check() error {
	if n.url != "" && n.urlFile != "" {
		return fmt.Errorf("--notify-url and --notify-url-file: give one")
	}
	flagName := "--notify-url"
	if n.urlFile != "" {
		data, err := os.ReadFile(n.urlFile)
		if err != nil {
			return fmt.Errorf("--notify-url-file: %w", err)
		}
		n.url, flagName = strings.TrimSpace(string(data)), "--notify-url-file"
	}
	var err error
	if n.template, err = notify.ParseTemplate(n.text); err != nil {
		return fmt.Errorf("--notify-template: %w", err)
	}
	if n.url == "" {
		return nil
	}
	if u, err := url.Parse(n.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The value is not quoted: it may hold a token.
		return fmt.Errorf("%s: want an http or https URL with a host", flagName)
	}
	return nil
}

// notifier is the node's notifier, started; nil without a URL.
func (n *notifyOptions) notifier(ctx context.Context, node string, objects *kube.Watch, m *metrics.Metrics,
	log *zap.Logger) *notify.Notifier {
	if n.url == "" {
		return nil
	}
	nt := &notify.Notifier{URL: n.url, Template: n.template, Node: node,
		Config: func() string {
			if nd, ok := objects.Node(); ok {
				return nd.Annotations[names.DesiredConfig]
			}
			return ""
		},
		Client: notify.NewClient(15 * time.Second), Result: m.NotificationResult, Log: log.Named("notify"), Now: time.Now}
	nt.Start(ctx)
	return nt
}
