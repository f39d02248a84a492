package config

import "net"

// OverrideListen replaces server.listen with addr, as `runfleet serve
// --listen` (or RUNFLEET_LISTEN) does, and checks addr as the file's value
// is checked: a port change then needs no edit of a tracked config file.
// The error names the flag, since the file is not at fault.
func (c *Config) OverrideListen(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return &FieldError{Field: "--listen", Problem: "\"" + addr + "\": must be host:port (e.g. 127.0.0.1:8080, or :8080 for every interface)"}
	}
	if c.Server.MetricsAddress == addr {
		return &FieldError{Field: "--listen", Problem: "\"" + addr + "\" is server.metrics_address already; /metrics needs a listener of its own there"}
	}
	c.Server.Listen = addr
	return nil
}
