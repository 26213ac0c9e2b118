// A NATS service as go-micro's NATS transport shapes one, on Debian's nats.go: a queue group of
// responders on a subject, each request answered with "hello " and its payload (the request's
// headers echoed), after -delay; every -error-every'th answered with a NATS micro service
// error (Nats-Service-Error-Code 500). Prints "ready" once subscribed, and "served N" when
// stopped (SIGTERM or its standard input closed).
//
// Built offline: GO111MODULE=off GOPATH=/usr/share/gocode go build -o responder responder.go
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	url := flag.String("url", nats.DefaultURL, "the server")
	subject := flag.String("subject", "greeter", "the subject served")
	delay := flag.Duration("delay", 0, "how long each request takes")
	errorEvery := flag.Uint64("error-every", 0, "answer every Nth request with a service error")
	flag.Parse()

	nc, err := nats.Connect(*url, nats.Name("throng test responder"), nats.MaxReconnects(-1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var served uint64
	_, err = nc.QueueSubscribe(*subject, "responders", func(m *nats.Msg) {
		n := atomic.AddUint64(&served, 1)
		if *delay > 0 {
			time.Sleep(*delay)
		}
		reply := nats.NewMsg(m.Reply)
		reply.Data = append([]byte("hello "), m.Data...)
		for k, vs := range m.Header {
			for _, v := range vs {
				reply.Header.Add(k, v)
			}
		}
		if *errorEvery > 0 && n%*errorEvery == 0 {
			reply.Header.Set("Nats-Service-Error-Code", "500")
			reply.Header.Set("Nats-Service-Error", "failed on purpose")
		}
		_ = m.RespondMsg(reply)
	})
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ready")

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		buf := make([]byte, 1)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				stop <- syscall.SIGTERM
				return
			}
		}
	}()
	<-stop
	_ = nc.Drain()
	fmt.Printf("served %d\n", atomic.LoadUint64(&served))
}
