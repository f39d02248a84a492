// Command runfleet is the single binary of runfleet: `runfleet serve` runs
// embedded mode, and the other commands operate a running server. Run
// `runfleet help` for the commands.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
