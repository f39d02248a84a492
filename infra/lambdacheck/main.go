// Command lambdacheck checks Lambda bootstrap binaries the way the
// provided.al2023 arm64 runtime will need them, so that a wrong build
// recipe fails `make lint` instead of the first invocation after a deploy.
//
//	go run ./infra/lambdacheck [-max-bytes N] path/to/bootstrap...
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	maxBytes := flag.Int64("max-bytes", 20<<20, "largest acceptable binary, in bytes")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: lambdacheck [-max-bytes N] bootstrap...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, path := range flag.Args() {
		if err := checkBootstrap(path, *maxBytes); err != nil {
			fmt.Fprintln(os.Stderr, "lambdacheck:", err)
			failed = true
			continue
		}
		fmt.Println("lambdacheck: ok", path)
	}
	if failed {
		os.Exit(1)
	}
}
