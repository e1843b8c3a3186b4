package testserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Fault is an HTTP endpoint on loopback that misbehaves in one way, for fault-injection tests
// of the S3 and MLflow clients: Silent accepts connections and never answers; CutOff answers
// 200 with a body it breaks off halfway.
type Fault struct {
	Addr  string       // 127.0.0.1:PORT
	Conns atomic.Int32 // connections accepted (one per attempt of a client without keep-alive reuse)
	ln    net.Listener
	mu    sync.Mutex
	open  []net.Conn
}

// StartSilent starts an endpoint that reads requests and never answers.
func StartSilent() (*Fault, error) {
	return startFault(func(c net.Conn) { io.Copy(io.Discard, c) })
}

// StartCutOff starts an endpoint that reads a request's head, promises a 1000-byte body and
// closes the connection after 10 bytes of it.
func StartCutOff() (*Fault, error) {
	return startFault(func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"partial\":")
	})
}

func startFault(serve func(net.Conn)) (*Fault, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fault{Addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.Conns.Add(1)
			f.mu.Lock()
			f.open = append(f.open, c)
			f.mu.Unlock()
			go func() { serve(c); c.Close() }()
		}
	}()
	return f, nil
}

// Close stops listening and drops every connection.
func (f *Fault) Close() {
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.open {
		c.Close()
	}
}
