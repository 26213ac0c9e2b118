// A gRPC server that throng did not write, for its tests: grpc-go's own health service
// (grpc.health.v1.Health: Check, and Watch, which streams) and server reflection (grpc-go 1.33,
// Debian's, serves only grpc.reflection.v1alpha). No generated code of ours.
//
// Built offline from Debian's packages (golang-go, golang-google-grpc-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o target/grpc-go-server testdata/grpc/server.go
//
// It prints "listening on HOST:PORT" once it accepts, and stops on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus("throng.Test", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, h)
	reflection.Register(s)
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, os.Interrupt)
		<-c
		s.Stop()
	}()
	fmt.Printf("listening on %s\n", lis.Addr())
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
