package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/webhook"
)

const webhookUsage = `Usage:
  runfleet webhook send FILE [--secret S] [--server URL | --url URL] [--event EVENT] [--delivery ID] [-o table|json]

Sends a webhook payload to runfleet exactly as GitHub delivers one, for
trying runfleet without GitHub. Run 'runfleet webhook send -h' for flags.
`

const sendDescription = `Signs FILE (a JSON payload; "-" reads stdin) with the webhook secret
(X-Hub-Signature-256), POSTs it with X-GitHub-Event and X-GitHub-Delivery set
as GitHub sets them, and prints runfleet's answer. Example payloads are in
examples/payloads/. Reuse a --delivery id to simulate GitHub redelivering it.
It goes to the server's /webhook: --server, or RUNFLEET_SERVER, as for every
other command. --url (or RUNFLEET_WEBHOOK_URL) gives the whole endpoint
instead, for one that is not <server>/webhook, such as the AWS stack's
WebhookUrl. Exits 1 unless runfleet answered 2xx.`

// sendTimeout bounds one delivery; GitHub itself gives up after 10 s, but a
// person trying things out can wait longer.
const sendTimeout = time.Minute

func (c *cli) webhook(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, webhookUsage)
		return exitUsage
	}
	switch args[0] {
	case "send":
		return c.webhookSend(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stderr, webhookUsage)
		return exitOK
	default:
		fmt.Fprintf(c.stderr, "runfleet webhook: unknown command %q\n\n%s", args[0], webhookUsage)
		return exitUsage
	}
}

func (c *cli) webhookSend(ctx context.Context, args []string) int {
	fs := c.newFlags("webhook send", "runfleet webhook send FILE [--secret S] [--server URL | --url URL] [--event EVENT] [--delivery ID] [-o table|json]", sendDescription)
	secretFlag := fs.String("secret", "", "webhook secret (env RUNFLEET_WEBHOOK_SECRET; the variable is safer: flags show in ps)")
	server := fs.String("server", c.envOr("RUNFLEET_SERVER", defaultServer), "runfleet server URL; the delivery goes to its /webhook (env RUNFLEET_SERVER)")
	url := fs.String("url", c.getenv("RUNFLEET_WEBHOOK_URL"), "the whole webhook endpoint, instead of <server>/webhook (env RUNFLEET_WEBHOOK_URL)")
	event := fs.String("event", webhook.EventWorkflowJob, "X-GitHub-Event to send")
	delivery := fs.String("delivery", "", "X-GitHub-Delivery to send (default: a fresh random id)")
	asJSON := new(bool)
	addOutputFlags(fs, asJSON)
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) != 1 {
		return c.usageError(fs, "want exactly one payload FILE, got %d arguments", len(positional))
	}
	secret := *secretFlag
	if secret == "" {
		secret = c.getenv("RUNFLEET_WEBHOOK_SECRET")
	}
	if secret == "" {
		return c.usageError(fs, "no webhook secret: set --secret or RUNFLEET_WEBHOOK_SECRET (the value of the server's webhook.secret_env or secret_file)")
	}
	body, err := readPayload(positional[0])
	if err != nil {
		return c.fail(err)
	}
	*url = webhookEndpoint(fs, *server, *url)

	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	res, err := webhook.Send(ctx, *url, []byte(secret), *event, body, *delivery)
	if err != nil {
		// The sender's error wraps the transport's, and each repeats the
		// URL; say it once, then the cause.
		var urlErr *neturl.Error
		if errors.As(err, &urlErr) {
			err = fmt.Errorf("cannot deliver the webhook to %s: %w", *url, httpapi.TransportCause(err))
		}
		return c.fail(err)
	}
	if *asJSON {
		// The answer as it came, ended like every other output.
		_, _ = c.stdout.Write(res.Body)
		if len(res.Body) == 0 || res.Body[len(res.Body)-1] != '\n' {
			fmt.Fprintln(c.stdout)
		}
	} else {
		printSendResult(c.stdout, res)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		fmt.Fprintf(c.stderr, "runfleet: webhook delivery %s was not accepted (HTTP %d)\n", res.DeliveryID, res.StatusCode)
		return exitFailure
	}
	return exitOK
}

// webhookEndpoint is where a delivery goes. A flag beats the environment,
// so --server given on the command line wins over RUNFLEET_WEBHOOK_URL set
// in the shell; between two of the same kind, the whole URL wins.
func webhookEndpoint(fs *flag.FlagSet, server, url string) string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["server"] && !set["url"] {
		return strings.TrimRight(server, "/") + "/webhook"
	}
	if url != "" {
		return url
	}
	return strings.TrimRight(server, "/") + "/webhook"
}

func readPayload(path string) ([]byte, error) {
	if path == "-" {
		body, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("reading the payload from stdin: %w", err)
		}
		return body, nil
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the payload: %w", err)
	}
	return body, nil
}

func printSendResult(w io.Writer, res *webhook.SendResult) {
	r := res.Reply
	if r == nil {
		fmt.Fprintf(w, "HTTP %d: %s\ndelivery: %s\n", res.StatusCode, truncate(string(res.Body), 300), res.DeliveryID)
		return
	}
	fmt.Fprintf(w, "HTTP %d %s: %s\ndelivery: %s\n", res.StatusCode, r.Status, r.Message, res.DeliveryID)
	if r.Outcome != nil && r.Instance != "" {
		fmt.Fprintf(w, "instance: %s (pool %s)\n", r.Instance, r.Pool)
	}
}
