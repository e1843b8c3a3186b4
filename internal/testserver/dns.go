package testserver

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterDomain is the test cluster's DNS domain: a Service is SERVICE.NAMESPACE.svc.cluster.local.
const ClusterDomain = "cluster.local"

// clusterDNS answers a node's pods the names of Services (A records of their ClusterIP), as
// CoreDNS would; no CoreDNS is built here and no registry serves its image. Any other name is
// NXDOMAIN: nothing the tests run resolves outside the cluster.
type clusterDNS struct {
	conn   net.PacketConn
	client kubernetes.Interface
	done   chan struct{}
}

// startDNS serves on addr (UDP; the resolvers in the pods ask over UDP and answers stay small).
func startDNS(addr string, client kubernetes.Interface) (*clusterDNS, error) {
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return nil, err
	}
	d := &clusterDNS{conn: conn, client: client, done: make(chan struct{})}
	go d.serve()
	return d, nil
}

func (d *clusterDNS) serve() {
	defer close(d.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if out, ok := d.answer(buf[:n]); ok {
			d.conn.WriteTo(out, from)
		}
	}
}

// answer builds the reply to one query; false drops a message that is not one.
func (d *clusterDNS) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	ip, rcode := d.lookup(q.Name.String())
	reply := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RCode: rcode}
	b := dnsmessage.NewBuilder(nil, reply)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if ip != nil && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		var a dnsmessage.AResource
		copy(a.A[:], ip)
		if b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, a) != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// lookup finds SERVICE.NAMESPACE.svc.cluster.local.: the Service's IPv4 ClusterIP (nil for a
// headless one) and the answer's code.
func (d *clusterDNS) lookup(name string) (net.IP, dnsmessage.RCode) {
	rest, ok := strings.CutSuffix(strings.ToLower(name), ".svc."+ClusterDomain+".")
	if !ok {
		return nil, dnsmessage.RCodeNameError
	}
	svc, ns, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(ns, ".") {
		return nil, dnsmessage.RCodeNameError
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := d.client.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, dnsmessage.RCodeNameError
	}
	if err != nil {
		return nil, dnsmessage.RCodeServerFailure
	}
	return net.ParseIP(s.Spec.ClusterIP).To4(), dnsmessage.RCodeSuccess
}

func (d *clusterDNS) close() {
	d.conn.Close()
	<-d.done
}
