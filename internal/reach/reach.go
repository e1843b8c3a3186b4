// Package reach checks that a configured service answers, for `schedrl doctor`.
package reach

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Check reports whether target can be reached before ctx ends. http and https URLs must give
// any HTTP response; s3:// and tcp:// URLs and bare host:port must accept a TCP connection
// (s3 without a port means 443); file:// URLs and plain paths must exist.
func Check(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Scheme != "file") {
		if host, port, splitErr := net.SplitHostPort(target); splitErr == nil && host != "" && port != "" {
			return dial(ctx, target)
		}
		if strings.ContainsAny(target, "/.") || u == nil {
			return exists(target)
		}
		return fmt.Errorf("%q: not a URL, host:port or path", target)
	}
	switch u.Scheme {
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	case "s3", "tcp":
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "443")
		}
		return dial(ctx, host)
	case "file":
		return exists(u.Path)
	}
	return fmt.Errorf("%q: unsupported scheme %q", target, u.Scheme)
}

func dial(ctx context.Context, hostport string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return err
	}
	return c.Close()
}

func exists(path string) error {
	_, err := os.Stat(path)
	return err
}
