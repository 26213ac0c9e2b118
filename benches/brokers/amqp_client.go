// The peer of `throng run amqp://…?routing_key=KEY -c C -n N` in benches/brokers.sh: N RPCs on
// Debian's amqp091-go, as go-micro's RabbitMQ transport makes them: each request published to
// the default exchange with a correlation id and direct reply-to (amq.rabbitmq.reply-to), its
// reply matched by the id, by C goroutines sharing one connection and channel. Prints
// "done N errors E".
//
// With -publish, the peer of `throng run amqp://…?routing_key=KEY --amqp-mode publish`:
// N messages published (mandatory, no publisher confirms) to the default exchange on the
// queue KEY (declared, auto-delete), each with a message id and awaited by a consumer on a
// connection of its own (manual acks, prefetch 100), as throng's consumer takes them; an
// error is a message not delivered within -timeout.
//
// Built offline: GO111MODULE=off GOPATH=/usr/share/gocode go build -o amqp_client amqp_client.go
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const replyTo = "amq.rabbitmq.reply-to"

func main() {
	url := flag.String("url", "amqp://guest:guest@127.0.0.1:5672/", "the broker")
	key := flag.String("key", "greeter", "the routing key (the responder's queue)")
	n := flag.Uint64("n", 100000, "requests in all")
	c := flag.Int("c", 100, "requests at a time")
	data := flag.String("d", "hello", "each request's body")
	timeout := flag.Duration("timeout", 10*time.Second, "how long a reply is waited for")
	publish := flag.Bool("publish", false, "publish, each message awaited by a consumer")
	flag.Parse()

	conn, err := amqp.Dial(*url)
	fail(err)
	ch, err := conn.Channel()
	fail(err)
	var mu sync.Mutex
	waiting := make(map[string]chan struct{}, *c)
	done := func(id string) {
		mu.Lock()
		w := waiting[id]
		delete(waiting, id)
		mu.Unlock()
		if w != nil {
			close(w)
		}
	}
	var publishing amqp.Publishing
	if *publish {
		cc, err := amqp.Dial(*url)
		fail(err)
		cch, err := cc.Channel()
		fail(err)
		_, err = cch.QueueDeclare(*key, false, true, false, false, nil)
		fail(err)
		fail(cch.Qos(100, 0, false))
		msgs, err := cch.Consume(*key, "", false, false, false, false, nil)
		fail(err)
		go func() {
			for d := range msgs {
				_ = d.Ack(false)
				done(d.MessageId)
			}
		}()
		defer cc.Close()
	} else {
		publishing.ReplyTo = replyTo
		replies, err := ch.Consume(replyTo, "", true, false, false, false, nil)
		fail(err)
		go func() {
			for d := range replies {
				done(d.CorrelationId)
			}
		}()
	}
	body := []byte(*data)
	var next, errs uint64
	var wg sync.WaitGroup
	for i := 0; i < *c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(*timeout)
			timer.Stop()
			for {
				k := atomic.AddUint64(&next, 1)
				if k > *n {
					return
				}
				id := strconv.FormatUint(k, 10)
				w := make(chan struct{})
				mu.Lock()
				waiting[id] = w
				mu.Unlock()
				p := publishing
				p.Body = body
				if *publish {
					p.MessageId = id
				} else {
					p.CorrelationId = id
				}
				err := ch.Publish("", *key, *publish, false, p)
				if err != nil {
					atomic.AddUint64(&errs, 1)
					continue
				}
				timer.Reset(*timeout)
				select {
				case <-w:
					if !timer.Stop() {
						<-timer.C
					}
				case <-timer.C:
					atomic.AddUint64(&errs, 1)
				}
			}
		}()
	}
	wg.Wait()
	_ = conn.Close()
	fmt.Printf("done %d errors %d\n", *n, atomic.LoadUint64(&errs))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
