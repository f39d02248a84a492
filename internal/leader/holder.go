package leader

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// HolderID names this process as a lease holder: host name, process id
// and a random suffix. The host and pid tell an operator which replica
// holds a lease; the suffix keeps a restarted process (same host, and in
// a container the same pid 1) from passing for its predecessor, whose
// holding must expire or be released, never be renewed by a newcomer.
func HolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	raw := make([]byte, 4)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(raw))
}
