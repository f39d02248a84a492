package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/httpapi"
)

// defaultServer is server.listen's default.
const defaultServer = "http://127.0.0.1:8080"

// apiFlags are the flags every operator API command shares.
type apiFlags struct {
	server string
	token  string
	json   bool
}

// register adds the flags. The token's default is read from the
// environment only after parsing, so -h never prints a secret.
func (a *apiFlags) register(fs *flag.FlagSet, c *cli) {
	fs.StringVar(&a.server, "server", c.envOr("RUNFLEET_SERVER", defaultServer), "runfleet server URL (env RUNFLEET_SERVER)")
	fs.StringVar(&a.token, "token", "", "operator API token: the one the server reads from "+config.APITokenKeys+" (env RUNFLEET_API_TOKEN; the variable is safer: flags show in ps)")
	addOutputFlags(fs, &a.json)
}

func (a *apiFlags) client(c *cli) (*httpapi.Client, error) {
	token := a.token
	if token == "" {
		token = c.getenv("RUNFLEET_API_TOKEN")
	}
	return httpapi.NewClient(a.server, token, nil)
}

// apiFail prints an operator API error with a hint for the common mistakes.
func (c *cli) apiFail(err error) int {
	var apiErr *httpapi.Error
	if errors.As(err, &apiErr) {
		switch apiErr.StatusCode {
		case http.StatusUnauthorized:
			err = fmt.Errorf("%w\n(set --token or RUNFLEET_API_TOKEN to the token the server reads from %s)", err, config.APITokenKeys)
		case http.StatusNotFound:
			if apiErr.Message == httpapi.DisabledMessage {
				err = fmt.Errorf("%w\n(the server has no operator API token configured)", err)
			}
		}
	}
	return c.fail(err)
}
