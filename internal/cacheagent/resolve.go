package cacheagent

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver asks a DNS server directly for a name's addresses. The agent
// needs it because the machine's own resolution of the results host is the
// agent itself (/etc/hosts): Go's resolver, like libc's, reads /etc/hosts
// first and has no switch to skip it, so the pass-through to the real host
// speaks DNS itself.
type Resolver struct {
	// Server is the DNS server, host:port.
	Server  string
	Timeout time.Duration
}

// SystemDNSServer is the first nameserver of systemd-resolved's upstream
// list (/run/systemd/resolve/resolv.conf), else of /etc/resolv.conf. The
// stub at 127.0.0.53 is skipped: systemd-resolved answers from /etc/hosts
// too, which would send the agent to itself.
func SystemDNSServer() (string, error) {
	for _, f := range []string{"/run/systemd/resolve/resolv.conf", "/etc/resolv.conf"} {
		if s := firstNameserver(f); s != "" {
			return s, nil
		}
	}
	return "", errors.New("cacheagent: no usable nameserver in /run/systemd/resolve/resolv.conf or /etc/resolv.conf")
}

func firstNameserver(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(fields[1])
		if err != nil || a.IsLoopback() {
			continue
		}
		return net.JoinHostPort(a.String(), "53")
	}
	return ""
}

// ErrNoAddress is a name with no A or AAAA record.
var ErrNoAddress = errors.New("cacheagent: no address for the name")

// Lookup returns name's IPv4 addresses, else its IPv6 ones.
func (r *Resolver) Lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	var firstErr error
	for _, t := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		addrs, err := r.query(ctx, name, t)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if len(addrs) > 0 {
			return addrs, nil
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, fmt.Errorf("%w: %s", ErrNoAddress, name)
}

func (r *Resolver) query(ctx context.Context, name string, t dnsmessage.Type) ([]netip.Addr, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	qname, err := dnsmessage.NewName(strings.TrimSuffix(name, ".") + ".")
	if err != nil {
		return nil, fmt.Errorf("cacheagent: name %q: %w", name, err)
	}
	var idb [2]byte
	_, _ = rand.Read(idb[:])
	id := binary.BigEndian.Uint16(idb[:])
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: qname, Type: t, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", r.Server)
	if err != nil {
		return nil, fmt.Errorf("cacheagent: DNS server %s: %w", r.Server, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write(packed); err != nil {
		return nil, fmt.Errorf("cacheagent: DNS query: %w", err)
	}
	buf := make([]byte, 1232)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("cacheagent: DNS answer for %s: %w", name, err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf[:n]); err != nil || m.ID != id || !m.Response {
			continue // a stray or forged datagram: wait for ours
		}
		if m.RCode != dnsmessage.RCodeSuccess {
			return nil, fmt.Errorf("cacheagent: DNS answer for %s: %v", name, m.RCode)
		}
		var out []netip.Addr
		for _, a := range m.Answers {
			switch b := a.Body.(type) {
			case *dnsmessage.AResource:
				out = append(out, netip.AddrFrom4(b.A))
			case *dnsmessage.AAAAResource:
				out = append(out, netip.AddrFrom16(b.AAAA))
			}
		}
		return out, nil
	}
}

// DialContext dials addr (host:port) at the host's addresses from DNS, one
// after another, as net.Dialer would.
func (r *Resolver) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := r.Lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var last error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}
