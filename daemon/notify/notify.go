// Package notify tells people when the daemon disrupts its node, as kured
// posts to chat: a webhook called at the cordon, before the reboot, at the
// uncordon, at a health-gate rollback and at a failed update. It hears of
// them as an observer of the update's runner (phases.Observer) and of the
// health gate, so a notification follows the update's own steps. A
// notifier that is down never holds an update: notifications are queued,
// sent in the background with a timeout, and dropped when the queue is
// full; every result is counted (nodeconfd_notifications_total).
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/template"
	"time"

	"go.uber.org/zap"
)

// The events notified, the template's .Event.
const (
	EventCordoned   = "cordoned"
	EventRebooting  = "rebooting"
	EventUncordoned = "uncordoned"
	EventRolledBack = "rolled-back"
	EventFailed     = "failed"
)

// The results counted: sent, failed (an error or a non-2xx answer), and
// dropped (the queue was full).
const (
	ResultSent    = "sent"
	ResultFailed  = "failed"
	ResultDropped = "dropped"
)

// DefaultTemplate is the text of a notification.
const DefaultTemplate = "nodeconfd: node {{.Node}} {{.Text}}"

// sendTimeout bounds one webhook call; queueLen the notifications waiting.
const (
	sendTimeout = 10 * time.Second
	queueLen    = 32
)

// Message is one notification: what the template sees, and the webhook's
// JSON body with the template's text as "text" (what Slack's, Mattermost's
// and Rocket.Chat's incoming webhooks show).
type Message struct {
	Node   string    `json:"node"`
	Event  string    `json:"event"`
	Config string    `json:"config"`
	Text   string    `json:"-"`
	Time   time.Time `json:"time"`
}

// NewClient is the webhook's HTTP client: it never follows a redirect.
// A followed redirect would re-post the update's details (and, for a
// redirect to another host, whatever the body carries) to wherever the
// webhook's host, or anyone who can answer for it, points; the 3xx is
// reported as the webhook's answer instead.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// Notifier posts notifications to a webhook.
type Notifier struct {
	// URL is the webhook; it may hold a secret (a Slack webhook's path
	// does), so it is never logged.
	URL      string
	Template *template.Template
	Node     string
	// Config is the node's desired config now, for the message.
	Config func() string
	// Client sends the posts: NewClient's.
	Client *http.Client
	// Result counts each notification's result (a metric).
	Result func(result string)
	Log    *zap.Logger
	Now    func() time.Time

	queue chan Message
}

// ParseTemplate parses a notification template and runs it once on a
// sample, so that a template that cannot run is refused at start.
func ParseTemplate(text string) (*template.Template, error) {
	t, err := template.New("notification").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	if err := t.Execute(io.Discard, Message{Node: "n", Event: EventCordoned, Config: "c", Text: "t"}); err != nil {
		return nil, err
	}
	return t, nil
}

// Start sends the queued notifications until ctx ends.
func (n *Notifier) Start(ctx context.Context) {
	n.queue = make(chan Message, queueLen)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-n.queue:
				n.count(n.send(ctx, m), m.Event)
			}
		}
	}()
}

// Notify queues a notification of event; text completes "node X …".
func (n *Notifier) Notify(event, text string) {
	if n == nil || n.queue == nil {
		return
	}
	m := Message{Node: n.Node, Event: event, Text: text, Time: n.Now().UTC()}
	if n.Config != nil {
		m.Config = n.Config()
	}
	select {
	case n.queue <- m:
	default:
		n.count(errDropped, event)
	}
}

var errDropped = errors.New("the notification queue is full")

func (n *Notifier) count(err error, event string) {
	result := ResultSent
	switch {
	case errors.Is(err, errDropped):
		result = ResultDropped
	case err != nil:
		result = ResultFailed
	}
	if n.Result != nil {
		n.Result(result)
	}
	if err != nil {
		n.Log.Warn("Cannot send a notification; the update goes on", zap.String("node", n.Node),
			zap.String("event", event), zap.Error(err))
	}
}

// send posts m, rendered, to the webhook.
func (n *Notifier) send(ctx context.Context, m Message) error {
	var text strings.Builder
	if err := n.Template.Execute(&text, m); err != nil {
		return fmt.Errorf("rendering the notification: %w", err)
	}
	body, err := json.Marshal(struct {
		Text string `json:"text"`
		Message
	}{text.String(), m})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("building the webhook request")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may hold a secret: not in the logs
		}
		return fmt.Errorf("calling the webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the webhook answered %s", resp.Status)
	}
	return nil
}
