// A nats.go client doing what the `nats_load` example does, for CPU per request beside it: -c
// goroutines sharing one connection, each sending requests (or publishing, each message
// awaited by a subscriber on a connection of its own) one after the other until -n in all.
// Prints "requests: N in S s".
//
// Built offline: GO111MODULE=off GOPATH=/usr/share/gocode go build -o requester requester.go
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	url := flag.String("url", nats.DefaultURL, "the server")
	subject := flag.String("subject", "greeter", "the subject")
	c := flag.Int("c", 10, "goroutines")
	n := flag.Int64("n", 100000, "requests in all")
	publish := flag.Bool("publish", false, "publish, each message awaited by a subscriber")
	flag.Parse()
	nc, err := nats.Connect(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var waiting sync.Map
	if *publish {
		sc, err := nats.Connect(*url)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sc.Subscribe(*subject, func(m *nats.Msg) {
			if ch, ok := waiting.LoadAndDelete(m.Header.Get("Id")); ok {
				ch.(chan struct{}) <- struct{}{}
			}
		})
		sc.Flush()
	}
	var left, errors, id int64 = *n, 0, 0
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < *c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.AddInt64(&left, -1) >= 0 {
				if *publish {
					m := nats.NewMsg(*subject)
					k := strconv.FormatInt(atomic.AddInt64(&id, 1), 10)
					m.Header.Set("Id", k)
					m.Data = []byte("hello")
					ch := make(chan struct{}, 1)
					waiting.Store(k, ch)
					nc.PublishMsg(m)
					select {
					case <-ch:
					case <-time.After(30 * time.Second):
						atomic.AddInt64(&errors, 1)
					}
				} else if _, err := nc.Request(*subject, []byte("hello"), 30*time.Second); err != nil {
					atomic.AddInt64(&errors, 1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("requests: %d in %.2f s (%d errors)\n", *n, time.Since(start).Seconds(), errors)
}
