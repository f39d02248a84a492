package cacheagent

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers A queries for the names in zone and NXDOMAIN for the
// rest, on UDP, as a VPC resolver would.
func dnsServer(t *testing.T, zone map[string]netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var q dnsmessage.Message
			if q.Unpack(buf[:n]) != nil || len(q.Questions) != 1 {
				continue
			}
			qq := q.Questions[0]
			resp := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, RecursionAvailable: true}, Questions: q.Questions}
			addr, ok := zone[strings.TrimSuffix(qq.Name.String(), ".")]
			switch {
			case !ok:
				resp.RCode = dnsmessage.RCodeNameError
			case qq.Type == dnsmessage.TypeA && addr.Is4():
				resp.Answers = []dnsmessage.Resource{{
					Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
					Body:   &dnsmessage.AResource{A: addr.As4()},
				}}
			}
			b, _ := resp.Pack()
			_, _ = pc.WriteTo(b, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestPassThrough: a call of the results service that is not the cache's
// (here an artifact call) reaches the real host unchanged — method, path,
// query, GitHub's token, body — and its answer comes back unchanged. The
// real host is found by DNS, not /etc/hosts: the test names it
// "localhost", which /etc/hosts puts at 127.0.0.1, while DNS and the
// "GitHub" server are at 127.0.0.2.
func TestPassThrough(t *testing.T) {
	githubCA, err := NewCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := githubCA.Leaf("localhost")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		method, uri, auth, host, body string
	}
	got := make(chan seen, 1)
	gh := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Header.Get("Authorization"), r.Host, string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "github")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"ok":true,"signed_upload_url":"https://blob.example/x"}`)
	}))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	gh.Listener = l
	gh.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	gh.StartTLS()
	t.Cleanup(gh.Close)
	_, port, _ := net.SplitHostPort(l.Addr().String())

	res := &Resolver{Server: dnsServer(t, map[string]netip.Addr{"localhost": netip.MustParseAddr("127.0.0.2")})}
	up := UpstreamTransport(res, port, &tls.Config{RootCAs: githubCA.Pool()})
	a, err := New(Options{CacheURL: "http://127.0.0.1:1", Tokens: TokenFunc(func(context.Context) (string, error) { return "runfleet", nil }), Upstream: up,
		PassHosts: []string{"localhost", "unknown.test"}})
	if err != nil {
		t.Fatal(err)
	}
	const path = "/twirp/github.actions.results.api.v1.ArtifactService/CreateArtifact?x=1"
	req := httptest.NewRequest(http.MethodPost, "https://localhost"+path, strings.NewReader(`{"name":"logs"}`))
	req.Header.Set("Authorization", "Bearer github-token")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get("X-Upstream") != "github" || !strings.Contains(rec.Body.String(), "blob.example") {
		t.Fatalf("answer %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
	s := <-got
	want := seen{http.MethodPost, path, "Bearer github-token", "localhost", `{"name":"logs"}`}
	if s != want {
		t.Fatalf("upstream saw %+v, want %+v", s, want)
	}
	if c := a.Counts(); c.PassThrough != 1 || c.CacheCalls != 0 {
		t.Fatalf("counts %+v", c)
	}

	t.Run("a results host DNS does not know is a bad gateway, not the agent itself", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "https://unknown.test/x", nil)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadGateway {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("another host is refused: the agent is no forward proxy", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "https://example.com/x", nil)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != http.StatusMisdirectedRequest {
			t.Fatalf("status %d", rec.Code)
		}
	})
}

func TestSystemDNSServerSkipsLoopback(t *testing.T) {
	dir := t.TempDir()
	f := dir + "/resolv.conf"
	writeFile(t, f, "# stub\nnameserver 127.0.0.53\nsearch x\nnameserver 10.0.0.2\n")
	if got := firstNameserver(f); got != "10.0.0.2:53" {
		t.Fatalf("got %q", got)
	}
	writeFile(t, f, "nameserver 127.0.0.53\n")
	if got := firstNameserver(f); got != "" {
		t.Fatalf("got %q", got)
	}
}
