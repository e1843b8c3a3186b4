package testserver

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterDNSAnswersServices: Go's own resolver, asking the cluster DNS as a pod's would,
// gets a Service's ClusterIP for SERVICE.NAMESPACE.svc.cluster.local, and "no such host" for a
// Service that does not exist and for names outside the cluster.
func TestClusterDNSAnswersServices(t *testing.T) {
	k, err := StartKube()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "schedrl-extender"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8888}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := startDNS("127.0.0.1:0", client)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.conn.LocalAddr().String())
	}}
	ips, err := r.LookupHost(ctx, "schedrl-extender.default.svc."+ClusterDomain+".")
	if err != nil || len(ips) != 1 || ips[0] != svc.Spec.ClusterIP {
		t.Fatalf("schedrl-extender.default.svc: %v (err %v), want [%s]", ips, err, svc.Spec.ClusterIP)
	}
	for _, name := range []string{"missing.default.svc." + ClusterDomain + ".", "example.com.", "schedrl-extender.default.svc.schedrl.svc." + ClusterDomain + "."} {
		ips, err := r.LookupHost(ctx, name)
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("%s: %v (err %v), want no such host", name, ips, err)
		}
	}
}
