// Command pause is the sandbox process of the test node's pods (what registry.k8s.io/pause is,
// which no registry here can serve): it holds the pod's namespaces, reaps the children that
// exit into it as PID 1, and exits on SIGINT or SIGTERM. Built static and packed into an image
// by internal/testserver.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
