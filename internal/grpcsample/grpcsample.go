// Package grpcsample is a small gRPC service, Greeter, written without
// generated code (its messages are protobuf's well-known wrappers): the
// sample app of deploy/local/grpchello and the app behind the proxies'
// HTTP/2 tests. It has a unary method (Hello) and a server-streaming one
// (Count), and each call's trailer says which replica answered.
package grpcsample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// ServiceName is the gRPC service's full name.
const ServiceName = "ebb.sample.Greeter"

// Full method names, as a client calls them.
const (
	HelloMethod = "/" + ServiceName + "/Hello"
	CountMethod = "/" + ServiceName + "/Count"
)

// TrailerServedBy is the trailer key that names the replica (Server.Name).
const TrailerServedBy = "x-served-by"

// Server implements Greeter.
type Server struct {
	// Name goes in every call's TrailerServedBy trailer.
	Name string
	// Delay is how long Hello works before answering (0: none), and Count
	// between two messages.
	Delay time.Duration
	// Gate, when not nil, is waited on by every call before it answers (and
	// by Count before each message): tests hold calls in flight with it.
	Gate <-chan struct{}
}

// Hello answers "hello, NAME".
func (s *Server) Hello(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	_ = grpc.SetTrailer(ctx, metadata.Pairs(TrailerServedBy, s.Name))
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return wrapperspb.String("hello, " + in.GetValue()), nil
}

// Count sends the numbers 1 to N.
func (s *Server) Count(in *wrapperspb.UInt32Value, stream grpc.ServerStream) error {
	stream.SetTrailer(metadata.Pairs(TrailerServedBy, s.Name))
	for i := uint32(1); i <= in.GetValue(); i++ {
		if err := s.wait(stream.Context()); err != nil {
			return err
		}
		if err := stream.SendMsg(wrapperspb.UInt32(i)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) wait(ctx context.Context) error {
	if s.Gate != nil {
		select {
		case <-s.Gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.Delay > 0 {
		t := time.NewTimer(s.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Register adds s to a gRPC server.
func Register(g *grpc.Server, s *Server) { g.RegisterService(&serviceDesc, s) }

// serviceDesc is what protoc-gen-go-grpc would generate for:
//
//	service Greeter {
//	  rpc Hello(google.protobuf.StringValue) returns (google.protobuf.StringValue);
//	  rpc Count(google.protobuf.UInt32Value) returns (stream google.protobuf.UInt32Value);
//	}
var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Hello",
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			s := srv.(*Server)
			if icpt == nil {
				return s.Hello(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: HelloMethod}
			return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return s.Hello(ctx, req.(*wrapperspb.StringValue))
			})
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Count",
		ServerStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			in := new(wrapperspb.UInt32Value)
			if err := stream.RecvMsg(in); err != nil {
				return err
			}
			return srv.(*Server).Count(in, stream)
		},
	}},
}

// Hello calls Greeter.Hello on cc.
func Hello(ctx context.Context, cc grpc.ClientConnInterface, name string, opts ...grpc.CallOption) (string, error) {
	out := new(wrapperspb.StringValue)
	if err := cc.Invoke(ctx, HelloMethod, wrapperspb.String(name), out, opts...); err != nil {
		return "", err
	}
	return out.GetValue(), nil
}

// Count calls Greeter.Count on cc and returns the numbers received (those
// received before an error, with it).
func Count(ctx context.Context, cc grpc.ClientConnInterface, n uint32, opts ...grpc.CallOption) ([]uint32, error) {
	stream, err := cc.NewStream(ctx, &serviceDesc.Streams[0], CountMethod, opts...)
	if err != nil {
		return nil, err
	}
	if err := stream.SendMsg(wrapperspb.UInt32(n)); err != nil {
		return nil, err
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	var got []uint32
	for {
		m := new(wrapperspb.UInt32Value)
		if err := stream.RecvMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, fmt.Errorf("after %d messages: %w", len(got), err)
		}
		got = append(got, m.GetValue())
	}
}
