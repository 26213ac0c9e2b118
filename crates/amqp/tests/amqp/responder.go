// An RPC service as go-micro's RabbitMQ transport shapes one, on Debian's amqp091-go: a queue
// named -queue (declared, auto-delete) bound to the default exchange (and to -exchange with the
// queue's name as routing key, when given), each request answered on its reply-to with "hello "
// and its body, its correlation id and headers echoed, after -delay. Prints "ready" once
// consuming, and "served N" when stopped (SIGTERM or its standard input closed).
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

	amqp "github.com/rabbitmq/amqp091-go"
)

func main() {
	url := flag.String("url", "amqp://guest:guest@127.0.0.1:5672/", "the broker")
	queue := flag.String("queue", "greeter", "the queue served")
	exchange := flag.String("exchange", "", "an exchange to bind the queue to, with its name as routing key")
	delay := flag.Duration("delay", 0, "how long each request takes")
	flag.Parse()

	conn, err := amqp.Dial(*url)
	fail(err)
	ch, err := conn.Channel()
	fail(err)
	_, err = ch.QueueDeclare(*queue, false, true, false, false, nil)
	fail(err)
	if *exchange != "" {
		fail(ch.ExchangeDeclare(*exchange, "direct", false, true, false, false, nil))
		fail(ch.QueueBind(*queue, *queue, *exchange, false, nil))
	}
	fail(ch.Qos(100, 0, false))
	deliveries, err := ch.Consume(*queue, "responder", false, false, false, false, nil)
	fail(err)
	var served uint64
	go func() {
		for d := range deliveries {
			atomic.AddUint64(&served, 1)
			if *delay > 0 {
				time.Sleep(*delay)
			}
			_ = ch.Publish("", d.ReplyTo, false, false, amqp.Publishing{
				CorrelationId: d.CorrelationId,
				Headers:       d.Headers,
				Body:          append([]byte("hello "), d.Body...),
			})
			_ = d.Ack(false)
		}
	}()
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
	_ = ch.Cancel("responder", false)
	_ = conn.Close()
	fmt.Printf("served %d\n", atomic.LoadUint64(&served))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
