package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// recoveredMsg is the line runfleet logs for each delivery its reconcile
// pass recovers from GitHub's delivery log (engine/reconcile_deliveries.go),
// with the delivery's GUID as delivery_id.
const recoveredMsg = "lost webhook delivery recovered from GitHub's delivery log"

// deliveryLog is what the App's webhook delivery log (kept by the fake
// GitHub, one entry per attempt) and runfleet's logs say about deliveries
// the senders gave up on.
type deliveryLog struct {
	attempts, failed int // failed: not answered 2xx
	// lost are the deliveries no attempt delivered, by GUID: their action.
	lost map[string]string
	// recovered are the GUIDs runfleet logged as recovered from the log.
	recovered map[string]bool
	// fetches and lists are runfleet's calls to the delivery log.
	fetches, lists int
}

// readDeliveryLog reads the fake's delivery log and runfleet's logs.
func readDeliveryLog(attempts []githubtest.Delivery, serveLogs []string, calls map[string]int) (deliveryLog, error) {
	dl := deliveryLog{
		attempts: len(attempts), lost: map[string]string{}, recovered: map[string]bool{},
		fetches: calls[githubtest.RouteAppHookDelivery], lists: calls[githubtest.RouteAppHookDeliveries],
	}
	delivered := map[string]bool{}
	for _, a := range attempts {
		if a.Delivered() {
			delivered[a.GUID] = true
		} else {
			dl.failed++
		}
	}
	for _, a := range attempts {
		if !delivered[a.GUID] {
			dl.lost[a.GUID] = a.Action
		}
	}
	for _, path := range serveLogs {
		if err := recoveredIn(path, dl.recovered); err != nil {
			return dl, err
		}
	}
	return dl, nil
}

// recoveredIn adds the GUIDs path's recovery lines name to into.
func recoveredIn(path string, into map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte("recovered from GitHub")) {
			continue
		}
		var entry struct {
			Msg        string `json:"msg"`
			DeliveryID string `json:"delivery_id"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Msg == recoveredMsg && entry.DeliveryID != "" {
			into[entry.DeliveryID] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// unrecovered are the lost deliveries runfleet never recovered, as
// "GUID (action)", sorted.
func (dl deliveryLog) unrecovered() []string {
	var out []string
	for guid, action := range dl.lost {
		if !dl.recovered[guid] {
			out = append(out, fmt.Sprintf("%s (%s)", guid, action))
		}
	}
	slices.Sort(out)
	return out
}

// recoveredLost counts the lost deliveries runfleet recovered; the rest of
// what it recovered had failed once and was delivered by a resend too.
func (dl deliveryLog) recoveredLost() (lost, resent int) {
	for guid := range dl.recovered {
		if _, ok := dl.lost[guid]; ok {
			lost++
		} else {
			resent++
		}
	}
	return lost, resent
}

// lostByAction counts the lost deliveries by action.
func (dl deliveryLog) lostByAction() map[string]int {
	out := map[string]int{}
	for _, action := range dl.lost {
		out[action]++
	}
	return out
}
